package main

// The sizes of the file workloads' reads.
const (
	// backupBlock is a physical backup's copy buffer: mariadb-backup and xtrabackup copy data
	// files in reads of about a megabyte.
	backupBlock = 1 << 20
	// logBlock is a binary or relay log reader's: mysqlbinlog and a replica's SQL thread read
	// through an IO_CACHE of 8 KiB by default.
	logBlock = 8 << 10
	// randomBlock is an InnoDB page.
	randomBlock = 16 << 10
)

// workloadText says, for each workload, its name in the tables, what it stands for and what a run
// does.
var workloadText = map[string]struct{ title, standsFor, how string }{
	wBackup: {
		"backup: sequential 1 MiB reads",
		"a physical backup (mariadb-backup, xtrabackup) copying a data file",
		"reads the whole data file from start to end in 1 MiB read() calls, buffered",
	},
	wLog: {
		"log: sequential 8 KiB reads",
		"mysqlbinlog or a replica reading a binary or relay log",
		"reads the whole log file from start to end in 8 KiB read() calls, buffered",
	},
	wRandom: {
		"random: 16 KiB preads",
		"point lookups of a server that reads its pages through the page cache (InnoDB with innodb_flush_method=fsync, MyISAM, Aria)",
		"reads 16 KiB at random page-aligned offsets of the data file with pread(), from several threads, buffered, no fadvise hint",
	},
	wRandomMmap: {
		"random: 16 KiB through mmap",
		"point lookups of a reader that maps its files (MyISAM with myisam_use_mmap, SQLite with mmap_size, LMDB)",
		"copies 16 KiB at the same random offsets out of a shared read-only mapping of the data file, from several threads: each page fault on a page not cached reads around it",
	},
	wScanFsync: {
		"scan: InnoDB, fsync (buffered)",
		"a full table scan of InnoDB with innodb_flush_method=fsync, reading its data file through the page cache",
		"restarts MariaDB with innodb_flush_method=fsync (a cold buffer pool), then runs SELECT COUNT(*), SUM(LENGTH(pad)) over the whole table",
	},
	wScanODirect: {
		"scan: InnoDB, O_DIRECT (default)",
		"the same scan with the server's default innodb_flush_method=O_DIRECT, which bypasses the page cache and so block-device read-ahead",
		"restarts MariaDB with innodb_flush_method=O_DIRECT (a cold buffer pool), then runs the same query",
	},
}

// describe is a workload's description for the results.
func describe(name string, block, fileBytes int64) Workload {
	t := workloadText[name]
	return Workload{Name: name, Title: t.title, StandsFor: t.standsFor, How: t.how, BlockBytes: block, FileBytes: fileBytes}
}

// workloadNames are every workload, in the order the tables list them.
var workloadNames = []string{wBackup, wLog, wScanFsync, wScanODirect, wRandom, wRandomMmap}
