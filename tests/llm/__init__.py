"""Tests of the LLM layer (compiler/llm/), against a loopback chat-completions server."""
