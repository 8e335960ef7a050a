class Agent:
    def __init__(self, llm, budget_usd=2.0):
        self.llm = llm
        self.budget_usd = budget_usd
        self.spent_usd = 0.0

    def run(self, goal):
        history = [goal]
        while self.spent_usd < self.budget_usd:
            out = self.llm(history)
            self.spent_usd += out.cost
            history.append(out.text)
            if out.text.strip().endswith("DONE"):
                break
        return history
