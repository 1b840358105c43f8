package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// The ALTER workload builds a secondary index online. InnoDB sorts the new index's keys in
// innodb_sort_buffer_size chunks and merges them through files in innodb_tmpdir, about as large as
// the index, so the table is sized by the keys' bytes: -alter-mib of them.
const (
	addIndex  = "ALTER TABLE bench.wide ADD INDEX k (k), ALGORITHM=INPLACE, LOCK=NONE"
	dropIndex = "ALTER TABLE bench.wide DROP INDEX k"
	// alterKeyBytes is the length of one key: latin1, so one byte a character.
	alterKeyBytes = 128
)

// alterRAM is the ALTER run by the injected variant with innodb_tmpdir on its RAM volume, which the
// operator does only with spec.mysql.innodbTmpdir: Memory.
const alterRAM = "alter-ram"

// alterTableLoad creates the table the ALTER indexes: keys in random order (hashes), so that the
// sort has work to do.
func alterTableLoad(mib int) []string {
	return []string{
		fmt.Sprintf("CREATE TABLE bench.wide (id INT PRIMARY KEY, k VARCHAR(%d) CHARACTER SET latin1 NOT NULL) ENGINE=InnoDB", alterKeyBytes),
		fmt.Sprintf("INSERT INTO bench.wide SELECT seq, %s FROM %s", text(alterKeyBytes/8), seqRows(alterRows(mib))),
	}
}

// alterRows is the number of rows whose keys total mib MiB.
func alterRows(mib int) int64 { return int64(mib) << 20 / alterKeyBytes }

// alter times addIndex with the variant's own innodb_tmpdir.
func (v *variant) alter(ctx context.Context, _ config) (runResult, error) {
	return v.addIndex(ctx, "alter", "")
}

// alterInRAM times addIndex with innodb_tmpdir on the variant's tmpdir, the RAM volume of the
// injected variant. A table whose sort files outgrow the volume fails there with "disk full".
func (v *variant) alterInRAM(ctx context.Context, _ config) (runResult, error) {
	return v.addIndex(ctx, alterRAM, v.TmpDir)
}

// addIndex builds the index, on a session whose innodb_tmpdir is innodbTmpdir unless that is
// empty, and drops it again (untimed) for the next run.
func (v *variant) addIndex(ctx context.Context, name, innodbTmpdir string) (runResult, error) {
	r := runResult{Workload: name}
	conn, err := v.session(ctx, innodbTmpdir)
	if err != nil {
		return r, err
	}
	defer discard(conn)
	err = v.measure(ctx, &r, func() error {
		start := time.Now()
		_, err := conn.ExecContext(ctx, addIndex)
		return r.settle(err, start)
	})
	if err != nil || r.Failed != "" {
		return r, err
	}
	if _, err := conn.ExecContext(ctx, dropIndex); err != nil {
		return r, fmt.Errorf("failed to drop the index again: %w", err)
	}
	return r, nil
}

// tryInnoDBTmpdir checks that the server takes dir as a session's innodb_tmpdir.
func (v *variant) tryInnoDBTmpdir(ctx context.Context, dir string) error {
	conn, err := v.session(ctx, dir)
	if err != nil {
		return err
	}
	discard(conn)
	return nil
}

// session is a connection of its own whose innodb_tmpdir is dir, or the server's when dir is
// empty. Give it back with discard.
func (v *variant) session(ctx context.Context, dir string) (*sql.Conn, error) {
	conn, err := v.pod.DB().Conn(ctx)
	if err != nil || dir == "" {
		return conn, err
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION innodb_tmpdir = ?", dir); err != nil {
		discard(conn)
		return nil, fmt.Errorf("the server does not take innodb_tmpdir %s: %w", dir, err)
	}
	return conn, nil
}

// discard closes conn for good instead of returning it to the pool, which would hand its session
// settings on to whatever borrows it next.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
