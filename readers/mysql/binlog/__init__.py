"""The layer over python-mysql-replication: fast paths for the events and rows it decodes slowly, the events it does not decode (compressed payloads, MySQL 8 events), and the rule for the rest."""
