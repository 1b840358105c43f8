package mysql

import (
	"fmt"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// tempSpaceBlock is the unit of MariaDB's limits on temporary space: a value is rounded down to a
// multiple of it.
const tempSpaceBlock = 64 << 10

// minTempSpaceMargin is the least of the volume a server limit leaves free.
const minTempSpaceMargin = 2 << 20

// TempSpaceMargin is how much of a volume of size bytes the server's limit leaves free: a
// sixteenth, at least 2 MiB. The limit counts what the server writes to its temporary files, not
// what the volume holds: tmpfs rounds every file up to whole pages, an on-disk temporary table
// grows by whole blocks of its engine, and a commit may pass the limit by up to
// binlog_stmt_cache_size; the margin takes those, so that the server's error comes before the
// volume is full.
func TempSpaceMargin(size int64) int64 { return max(size/16, minTempSpaceMargin) }

// LimitTempSpace sets the server's limits on temporary space for a volume of size bytes, as spec
// asks (Auto unless it says None), when p's server has them.
func (l *Layout) LimitTempSpace(p Profile, size int64, spec *v1alpha1.MySQLSpec) {
	l.TempSpaceLimit, l.SessionTempSpaceLimit = 0, 0
	if !p.TempSpaceLimit || (spec != nil && spec.TempSpaceLimit == v1alpha1.TempSpaceLimitNone) {
		return
	}
	l.TempSpaceLimit = roundDownToBlock(size - TempSpaceMargin(size))
	if spec != nil && spec.SessionTempSpacePercent != nil {
		l.SessionTempSpaceLimit = max(tempSpaceBlock, roundDownToBlock(l.TempSpaceLimit*int64(*spec.SessionTempSpacePercent)/100))
	}
}

func roundDownToBlock(n int64) int64 { return max(tempSpaceBlock, n/tempSpaceBlock*tempSpaceBlock) }

// WhenFull says what the server does when temporary data reaches its limit or fills the volume at
// l.TmpDir, as the profile and the layout place that data. The behavior without a server limit
// was seen on MariaDB 10.11 and 11.8 and MySQL 9.7 (test/mariadb: TestFullTmpfs,
// TestFullSessionTablespaceStopsMySQL), with it on MariaDB 11.8 (TestServerTempSpaceLimit).
func WhenFull(p Profile, l Layout) string {
	const noLimit = "the server has no limit of its own on temporary space: "
	const errno28 = "fails with errno 28 (No space left on device)"
	switch {
	case l.TempSpaceLimit > 0:
		s := fmt.Sprintf("a query that would take more than %s of temporary space", quantity.Bytes(l.TempSpaceLimit))
		options := optMaxTmpTotal
		if l.SessionTempSpaceLimit > 0 {
			s += fmt.Sprintf(", or a session more than %s,", quantity.Bytes(l.SessionTempSpaceLimit))
			options += ", " + optMaxTmpSession
		}
		s += " fails with the server's own error (" + options + "); the server and the other sessions go on. " +
			"The server counts an Aria temporary table at its full size, also the pages Aria's page cache keeps in memory, so such a query can reach the limit with the volume partly empty"
		if l.InnoDBTmpDir != "" && paths.Within(l.InnoDBTmpDir, l.TmpDir) {
			s += "; online ALTER TABLE sort files (spec.mysql.innodbTmpdir: Memory) are not counted, and one that fills the volume " + errno28
		}
		return s
	case l.SessionTempDir != "" && paths.Within(l.SessionTempDir, l.TmpDir):
		return noLimit + "a sort whose files fill the volume " + errno28 + ", " +
			"but an on-disk internal temporary table that fills it, in a session temporary tablespace, stops the server (an InnoDB assertion); " +
			"size the volume with a margin, or set spec.mysql.sessionTempTablespaces: Disk"
	case p.TempSpaceLimit:
		return "spec.mysql.tempSpaceLimit is None: a query whose temporary data fills the volume " + errno28 +
			"; the server and the other sessions go on, but every session's temporary data fails meanwhile"
	}
	return noLimit + "a query whose temporary data fills the volume " + errno28 +
		"; the server and the other sessions go on, but every session's temporary data fails meanwhile"
}
