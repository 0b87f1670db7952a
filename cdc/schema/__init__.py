"""Table schemas: schema evolution, SQL dialects, DB-value conversion, table maps and globs."""
