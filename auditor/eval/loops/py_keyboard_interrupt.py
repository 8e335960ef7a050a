def chat_loop(agent, max_turns=30):
    turn = 0
    while True:
        try:
            agent.step()
        except KeyboardInterrupt:
            print("interrupted by user")
            break
        turn += 1
        if turn >= max_turns:
            break
