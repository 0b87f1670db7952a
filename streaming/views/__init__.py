"""Incrementally maintained views in the target (counting algorithm, seed 001).

- ``definition``: view definitions (YAML form or the SQL subset) -> ``ViewDef``.
- ``sqlparse``: the tokenizer/parser for the SQL subset.
- ``dialect``: the few SQL spellings that differ between targets.
- ``delta``: delta rules as SQL (counting model, delta-join expansion, merge).
- ``build``: full build / rebuild from the base tables, the ``cdc_views`` table.
- ``maintainer``: the hook the apply engine calls inside its transaction.
- ``connect``: a minimal SQL target (CLI fallback, tests, bench).
- ``views_cmd``: ``cdc views check|rebuild|status``.
"""
