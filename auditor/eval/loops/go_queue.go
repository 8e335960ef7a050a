package crawl

import "time"

func Crawl(start string, fetch func(string) ([]string, error)) {
	queue := []string{start}
	visited := map[string]bool{}
	client := newClient(30 * time.Second)
	for len(queue) > 0 {
		url := queue[0]
		queue = queue[1:]
		if visited[url] {
			continue
		}
		visited[url] = true
		links, err := fetch(url)
		if err != nil {
			continue
		}
		queue = append(queue, links...)
	}
	_ = client
}
