"""The LLM layer: `llm "…"` bodies filled by a model, locked for reproducible builds.

One module per concern (docs/llm.md has the whole story):

- `config`: `[tool.envc.llm]` in pyproject.toml, and the environment variables it names;
- `provider`: the chat-completions client (the `openai` package against any compatible
  endpoint), with retries, backoff that honours `Retry-After`, and a whole-request deadline;
- `render`: IR back to envspec text, for prompts;
- `prompt`: the messages of a request, built from the analysed IR;
- `lock`: `envc.lock`, the committed record of every accepted fill;
- `fill`: holes found, fills spliced into the spec text and checked by the real front end;
- `heal`: the bounded attempt loop that sends each failure back to the model, and
  `stats`, its pass rates per attempt and stage;
- `resolve`: what `envc compile` and `envc lock` do with the holes of one spec;
- `draft`: `envc draft`, whole specs written by the model from a description (with
  `spec_reference.md` and `example.envspec`; bodies use `reference.md`).

Model output is data: it is parsed and analysed like hand-written spec text, and the
code generated from it runs only in the check subprocesses (`compiler/check.py`).
"""
