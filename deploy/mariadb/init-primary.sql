-- Runs once on the primary's first start (docker-entrypoint-initdb.d).
-- The CDC user reads the binlog over the replication protocol and reads
-- table definitions; it never writes. Its password here is the demo value of
-- deploy/secrets/source-shop-password: change both together (or create the user yourself).
CREATE DATABASE IF NOT EXISTS shop;
CREATE USER IF NOT EXISTS 'cdc'@'%' IDENTIFIED BY 'cdc-password';
GRANT REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER ADMIN, SLAVE MONITOR ON *.* TO 'cdc'@'%';
GRANT SELECT ON *.* TO 'cdc'@'%';
CREATE TABLE IF NOT EXISTS shop.orders (
  id BIGINT PRIMARY KEY AUTO_INCREMENT,
  customer VARCHAR(64) NOT NULL,
  amount DECIMAL(12, 2) NOT NULL,
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
);
