/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package mysql is Steward's engine for MySQL (name "mysql": 8.0 and 8.4,
// official image mysql:<version>) and MariaDB (name "mariadb": 10.11 and
// 11.4, official image mariadb:<version>). One implementation serves both;
// the differences are the small table in flavor.go.
//
// # Life of an instance
//
// InitPrimary initialises the data directory (mysqld --initialize-insecure or
// mariadb-install-db), starts the server without networking on a socket in
// Config.RunDir, sets the superuser's password over that socket, creates the
// owner, its database and the replication user, and shuts the server down.
// Passwords travel only inside SQL statements over the local socket or in
// 0600 option files that are removed afterwards, never on a command line.
//
// InitReplica is a logical clone: it initialises an empty data directory,
// starts it without networking, streams mysqldump/mariadb-dump
// (--single-transaction --all-databases, binary log coordinates recorded as
// a comment) from the primary into the local server through the mysql or
// mariadb client, reads the coordinates from the dump as it passes, points
// replication at the primary from those coordinates, starts it, waits for
// the receiving thread to connect, and shuts down. The dump includes the
// mysql schema, so the replica has the primary's users and passwords.
//
// # What was verified against a real server
//
// The tests run against MariaDB 10.11 (Debian's mariadb-server); MariaDB 11.4
// and MySQL were not run. Verified on MariaDB 10.11 only: the rendered
// configuration is accepted and takes effect, initialisation with
// mariadb-install-db, the users and their passwords (quotes, backslash and
// '#' included), the clone with mariadb-dump --master-data=2 through the
// mariadb client, CHANGE MASTER TO / START SLAVE / SHOW SLAVE STATUS,
// replication after a restart, read-only replicas, Reload with SET GLOBAL,
// pending restarts, and that passwords reach neither output nor errors.
//
// Written from the MySQL 8.0/8.4 reference manual and not run against a
// server: mysqld --initialize-insecure; mysqldump --source-data=2
// --set-gtid-purged=OFF without the mysql.innodb_*_stats tables; loading a
// dump that includes the mysql schema into MySQL; CHANGE REPLICATION SOURCE
// TO with SOURCE_* options and GET_SOURCE_PUBLIC_KEY=1; START REPLICA;
// SHOW REPLICA STATUS with its Replica_*/Source_* column names;
// --super-read-only on replicas; innodb_buffer_pool_instances in the
// rendered configuration; removing a stale mysqld.sock.lock before a start.
package mysql
