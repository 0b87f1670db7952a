"""Transforms: shape what a source moves (columns left out, values masked or encrypted) in the daemon,
before anything reaches Kafka, so that the change stream, the per-table topics, dead letters and logs never
hold a clear value of a shaped column; and ``cdc compare`` applies the same shaping to the source before it
fingerprints, so a shaped target is still proven equal to its source.

- config.py: ``sources[].transforms`` (pydantic models);
- masks.py: the mask functions, the key files, :func:`decrypt` for key holders;
- expressions.py: the row filters' and computed columns' SQL expressions (parsed by sqlglot, evaluated here);
- mapper.py: the column-mapper hook (:class:`SourceTransforms`, :class:`ColumnMapper`) readers call where
  they choose a table's converters;
- decrypt_cmd.py: `cdc decrypt`.

docs/transforms.md is the user's page.
"""

from cdc.transforms.masks import decrypt, read_encryption_key

__all__ = ["decrypt", "read_encryption_key"]
