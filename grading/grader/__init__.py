"""The agentic grader: a group workspace with tools, backends (LLM, heuristic) behind one
interface, verdict validation with evidence that must resolve, and orchestration."""
