from autogen_agentchat.conditions import ExternalTermination, TimeoutTermination, TokenUsageTermination
from autogen_agentchat.teams import SelectorGroupChat

external = ExternalTermination()
stop = TimeoutTermination(300) | TokenUsageTermination(max_total_token=50_000) | external
team = SelectorGroupChat([planner, coder, reviewer], model_client=client, termination_condition=stop)
