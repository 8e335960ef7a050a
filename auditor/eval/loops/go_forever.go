package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		os.Exit(0)
	}()
	ch := subscribe()
	for {
		msg := <-ch
		handle(msg) // "done" here means nothing
	}
}
