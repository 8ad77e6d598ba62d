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

package dump

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Digest methods: how Manifest.Tables were computed. A verification
// computes the digests of the restored data the same way and refuses to
// compare digests of another method.
const (
	// DigestPostgreSQL: in the transaction whose snapshot pg_dump dumped,
	// per table count(*) and the sum, as an exact numeric, of the first
	// 64 bits of md5(row::text) read as a signed integer, with the
	// session's output settings fixed (DigestSettings).
	DigestPostgreSQL = "pg-row-md5-sum/v1"
	// DigestSQLInserts: from the dump's own text as it streamed past, per
	// table the number of tuples of its INSERT statements and the sum,
	// modulo 2^64, of the first 64 bits of the SHA-256 of each tuple's
	// literal text.
	DigestSQLInserts = "sql-insert-tuple-sha256-sum/v1"
)

// TableDigest is the content of one table in a backup: its row count and
// an order-independent checksum of its rows.
type TableDigest struct {
	// Table is "schema.table" (PostgreSQL, quoted where needed) or the
	// table's name (MySQL).
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	// Checksum is the sum of the rows' hashes (see the Digest methods),
	// in decimal.
	Checksum string `json:"checksum"`
}

// pgDigestSettings fix how rows are rendered as text, so that the same
// data gives the same text on the backed-up server and on the one it is
// restored into, whatever their defaults.
var pgDigestSettings = []string{
	"SET TimeZone = 'UTC'",
	"SET DateStyle = 'ISO, YMD'",
	"SET IntervalStyle = 'postgres'",
	"SET extra_float_digits = 3",
	"SET bytea_output = 'hex'",
	"SET lc_monetary = 'C'",
	// As pg_dump: every row, or an error rather than a filtered count.
	"SET row_security = off",
}

// pgTablesQuery lists the tables whose rows pg_dump dumps: ordinary
// tables and partitions (the rows of a partitioned table are in its
// partitions) outside the system schemas, except the tables of
// extensions, whose data pg_dump leaves to the extension.
const pgTablesQuery = `SELECT format('%I.%I', n.nspname, c.relname)
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE c.relkind = 'r'
	AND n.nspname NOT IN ('pg_catalog', 'information_schema')
	AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
	AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
		WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
	ORDER BY 1`

// pgSetDigestSettings applies pgDigestSettings to the session.
func pgSetDigestSettings(ctx context.Context, c *pgx.Conn) error {
	for _, q := range pgDigestSettings {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// pgDigests computes the digest of every table in what q sees: within a
// transaction, its snapshot.
func pgDigests(ctx context.Context, q pgx.Tx) ([]TableDigest, error) {
	rows, err := q.Query(ctx, pgTablesQuery)
	if err != nil {
		return nil, fmt.Errorf("listing the tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the tables: %w", err)
	}
	out := make([]TableDigest, 0, len(names))
	for _, name := range names {
		d := TableDigest{Table: name}
		// ONLY: a table's rows once, not again through its parent.
		err := q.QueryRow(ctx, `SELECT count(*), coalesce(sum(('x' || substr(md5(t::text), 1, 16))::bit(64)::bigint), 0)::text FROM ONLY `+
			name+` t`).Scan(&d.Rows, &d.Checksum)
		if err != nil {
			return nil, fmt.Errorf("computing the digest of %s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// insertDigester computes DigestSQLInserts from a dump as it is written
// to it, in constant memory whatever the size of a row. It understands
// what mysqldump and mariadb-dump write: a line that starts with
// "CREATE TABLE `name`" declares a table (so that empty tables count
// too), and a statement that starts a line with "INSERT INTO `name`
// VALUES" holds tuples "(...)" separated by "," (and, from mariadb-dump
// 10.11 on, line breaks) up to ";". Inside a tuple, quoted
// strings ('...', with backslash escapes and doubled quotes) may hold any
// byte.
type insertDigester struct {
	state  int
	line   []byte // the start of a line, until it is recognised
	table  string
	tables map[string]*tableSum

	tuple  hash.Hash
	depth  int
	quote  byte
	escape bool
}

type tableSum struct {
	rows int64
	sum  uint64
}

const (
	digLineStart = iota // reading the start of a line
	digSkipLine         // in a line of no interest
	digValues           // between the tuples of an INSERT
	digTuple            // inside a tuple
)

// maxLineHead bounds how much of a line's start is kept to recognise it.
const maxLineHead = 512

func newInsertDigester() *insertDigester {
	return &insertDigester{tables: map[string]*tableSum{}, tuple: sha256.New()}
}

func (d *insertDigester) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch d.state {
		case digLineStart:
			d.line = append(d.line, c)
			d.recognise()
			if c == '\n' && (d.state == digSkipLine || d.state == digLineStart) {
				// The line ended before it was recognised, or at once.
				d.state, d.line = digLineStart, d.line[:0]
			}
		case digSkipLine:
			if c == '\n' {
				d.state, d.line = digLineStart, d.line[:0]
			}
		case digValues:
			switch c {
			case '(':
				d.startTuple()
			case ';':
				d.state = digSkipLine
			}
		case digTuple:
			// Feed the tuple's bytes up to its closing parenthesis in one
			// call where possible.
			j := i
			for ; j < len(p); j++ {
				c := p[j]
				if d.quote != 0 {
					switch {
					case d.escape:
						d.escape = false
					case c == '\\':
						d.escape = true
					case c == d.quote:
						// A doubled quote is read as two strings, which
						// is the same bytes and the same depth.
						d.quote = 0
					}
					continue
				}
				switch c {
				case '\'', '"':
					d.quote = c
				case '(':
					d.depth++
				case ')':
					d.depth--
				}
				if d.depth == 0 {
					break
				}
			}
			if j == len(p) {
				d.tuple.Write(p[i:j])
				i = j - 1
				continue
			}
			d.tuple.Write(p[i:j])
			var sum [sha256.Size]byte
			t := d.tables[d.table]
			t.rows++
			t.sum += binary.BigEndian.Uint64(d.tuple.Sum(sum[:0]))
			d.state = digValues
			i = j
		}
	}
	return len(p), nil
}

// startTuple starts reading a tuple after its opening parenthesis.
func (d *insertDigester) startTuple() {
	d.state, d.depth, d.quote, d.escape = digTuple, 1, 0, false
	d.tuple.Reset()
}

// recognise looks at the start of the current line once enough of it is
// there.
func (d *insertDigester) recognise() {
	for _, prefix := range []string{"INSERT INTO `", "CREATE TABLE `"} {
		n := min(len(d.line), len(prefix))
		if string(d.line[:n]) != prefix[:n] {
			continue
		}
		if len(d.line) < len(prefix) {
			return // more is needed
		}
		name, rest, ok := backquoted(d.line[len(prefix)-1:])
		if !ok {
			if len(d.line) > maxLineHead {
				d.state = digSkipLine
			}
			return
		}
		if d.tables[name] == nil {
			d.tables[name] = &tableSum{}
		}
		if prefix[0] == 'C' {
			d.state = digSkipLine
			return
		}
		// mysqldump writes "VALUES (", mariadb-dump 10.11 "VALUES\n(".
		const values = " VALUES"
		if len(rest) <= len(values) {
			return
		}
		if string(rest[:len(values)]) != values || !strings.ContainsRune(" \n(", rune(rest[len(values)])) {
			// An INSERT of another shape (a column list): its rows are
			// not counted, and the comparison will say so.
			d.state = digSkipLine
			return
		}
		if rest[len(values)] == '(' {
			d.table = name
			d.startTuple()
			return
		}
		d.table, d.state = name, digValues
		return
	}
	d.state = digSkipLine
}

// backquoted reads a `quoted` identifier at the start of b (“ inside is
// one `) and returns it and what follows.
func backquoted(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '`' {
		return "", nil, false
	}
	var name []byte
	for i := 1; i < len(b); i++ {
		if b[i] != '`' {
			name = append(name, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == '`' {
			name = append(name, '`')
			i++
			continue
		}
		if i+1 == len(b) {
			return "", nil, false // a doubled quote may follow
		}
		return string(name), b[i+1:], true
	}
	return "", nil, false
}

// digests returns the tables' digests, sorted by table.
func (d *insertDigester) digests() []TableDigest {
	out := make([]TableDigest, 0, len(d.tables))
	for name, t := range d.tables {
		out = append(out, TableDigest{Table: name, Rows: t.rows, Checksum: strconv.FormatUint(t.sum, 10)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// pgSnapshot is an open transaction whose snapshot was exported.
type pgSnapshot struct {
	conn *pgx.Conn
	tx   pgx.Tx
	id   string
}

// pgExportSnapshot opens a read-only REPEATABLE READ transaction with the
// digest settings and exports its snapshot for pg_dump --snapshot.
func pgExportSnapshot(ctx context.Context, s Source) (*pgSnapshot, error) {
	c, err := pgConnect(ctx, s)
	if err != nil {
		return nil, err
	}
	if err := pgSetDigestSettings(ctx, c); err != nil {
		_ = c.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		_ = c.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	snap := &pgSnapshot{conn: c, tx: tx}
	if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&snap.id); err != nil {
		snap.close(ctx)
		return nil, err
	}
	return snap, nil
}

// close ends the transaction (it only read) and the connection.
func (p *pgSnapshot) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_ = p.tx.Rollback(ctx)
	_ = p.conn.Close(ctx)
}
