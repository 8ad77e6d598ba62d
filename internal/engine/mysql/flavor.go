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

package mysql

// flavor holds what differs between MySQL and MariaDB.
type flavor struct {
	name     string
	versions []string
	image    string
	// server is the server binary; client loads a dump; dump makes one.
	server, client, dump string
	// installDB, when set, is the program that initialises a data
	// directory (MariaDB); otherwise the server is run with
	// --initialize-insecure (MySQL).
	installDB string
	// dumpCoordinates is the dump option recording the binary log
	// coordinates as a comment.
	dumpCoordinates string
	// dumpExtra are further dump options.
	dumpExtra []string
	// changeSource starts the statement that points replication at a
	// primary; the option names follow.
	changeSource                                 string
	optHost, optPort, optUser, optPassword       string
	optLogFile, optLogPos                        string
	changeSourceExtra                            string
	startReplica, stopReplica, showReplicaStatus string
	// superReadOnly is set on replicas in addition to read_only.
	superReadOnly bool
	// bufferPoolInstances: the server knows innodb_buffer_pool_instances
	// (MariaDB 10.6 removed it).
	bufferPoolInstances bool
	// gtid: replicas follow by MariaDB's GTID (MASTER_USE_GTID=slave_pos),
	// so that they can be pointed at another primary (GTIDEngine).
	gtid bool
}

var mysqlFlavor = &flavor{
	name:            "mysql",
	versions:        []string{"8.0", "8.4"},
	image:           "mysql",
	server:          "mysqld",
	client:          "mysql",
	dump:            "mysqldump",
	dumpCoordinates: "--source-data=2",
	// The replica takes binary log coordinates, not GTIDs. MySQL 8 refuses
	// to drop and recreate its InnoDB statistics tables; the replica
	// computes its own statistics.
	dumpExtra: []string{"--set-gtid-purged=OFF",
		"--ignore-table=mysql.innodb_index_stats", "--ignore-table=mysql.innodb_table_stats"},
	changeSource: "CHANGE REPLICATION SOURCE TO",
	optHost:      "SOURCE_HOST", optPort: "SOURCE_PORT",
	optUser: "SOURCE_USER", optPassword: "SOURCE_PASSWORD",
	optLogFile: "SOURCE_LOG_FILE", optLogPos: "SOURCE_LOG_POS",
	// caching_sha2_password over a connection without TLS needs the
	// server's RSA key.
	changeSourceExtra:   ", GET_SOURCE_PUBLIC_KEY=1",
	startReplica:        "START REPLICA",
	stopReplica:         "STOP REPLICA",
	showReplicaStatus:   "SHOW REPLICA STATUS",
	superReadOnly:       true,
	bufferPoolInstances: true,
}

var mariadbFlavor = &flavor{
	name:            "mariadb",
	versions:        []string{"10.11", "11.4"},
	image:           "mariadb",
	server:          "mariadbd",
	client:          "mariadb",
	dump:            "mariadb-dump",
	installDB:       "mariadb-install-db",
	dumpCoordinates: "--master-data=2",
	changeSource:    "CHANGE MASTER TO",
	optHost:         "MASTER_HOST", optPort: "MASTER_PORT",
	optUser: "MASTER_USER", optPassword: "MASTER_PASSWORD",
	optLogFile: "MASTER_LOG_FILE", optLogPos: "MASTER_LOG_POS",
	startReplica:      "START SLAVE",
	stopReplica:       "STOP SLAVE",
	showReplicaStatus: "SHOW SLAVE STATUS",
	gtid:              true,
}
