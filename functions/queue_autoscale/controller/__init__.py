"""The controller layer between the handlers and the adapters: the evaluate tick.

`runtime` wires adapters once per cold start, `gather` reads every queue's inputs in batched
calls, `tick` decides per queue through the core, acts and publishes. Imports point inward:
handlers -> controller -> adapters, core.
"""
