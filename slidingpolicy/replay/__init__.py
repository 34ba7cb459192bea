"""Replay a workload against a real serving engine and judge it as the offline engine does.

`slidingpolicy replay` sends each request of a workload at its arrival time to an
OpenAI-compatible completions endpoint (token-id prompts, streaming, the request's SLOs in
`vllm_xargs`), timestamps every token as the client receives it, and turns what it measured
into the engine's own token log (`slidingpolicy.metrics`), so attainment by the eq. 1 deadlines and
every other metric has the one definition `simulate` uses.

- `requests`: a workload's requests as completions to send;
- `client`: the open-loop HTTP client (needs the ``replay`` extra, aiohttp);
- `measure`: what the client measured → the engine's metrics and per-request outcomes;
- `matrix`: rates × seeds × repeats, with the arms interleaved;
- `launcher`: a server process in its own process group, ready by /health, stopped by pid;
- `engines`: what `--launch` needs of an engine: its arms, its command, its Python;
- `vllm`, `transformers`: those engines' arms (their own schedulers, or a policy through the
  adapter);
- `launch`: one server per arm of the engine `--launch` names, each a replay target;
- `shapes`: model folders holding only a config, for dummy weights;
- `report`: rows, the per-arm summary with spread, and the plot.

Only `client` imports aiohttp; nothing in the library imports this package.
"""
