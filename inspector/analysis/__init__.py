"""Pure functions over a Checkpoint: no I/O, no printing. A package per domain, each importing only those below
it (tests/test_layers.py): ``facts`` (what is stored, counted) ← ``structure`` (the architecture and its mixer
kinds) ← ``serving`` (estimate, fit, plan, engines) ← ``training``; ``checks`` (the audit) over the facts;
``comparison`` (diff, compare, values, lineage) over facts, structure, serving and checks; ``knobs`` (what to change
for an answer to fit) over serving and training."""
