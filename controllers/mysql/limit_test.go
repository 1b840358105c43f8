package mysql

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// The server's limit follows the volume on MariaDB 11.5.1 and later only, a margin below its size,
// in whole 64 KiB blocks, and the drop-in and the flags carry it.
func TestLimitTempSpace(t *testing.T) {
	const mi = 1 << 20
	for _, c := range []struct {
		image         string
		size          int64
		spec          *v1alpha1.MySQLSpec
		total, perSes int64
	}{
		{"mariadb:11.8", 512 * mi, nil, 480 * mi, 0},
		{"mariadb:11.8", 16 * mi, nil, 14 * mi, 0},     // the 2 MiB floor
		{"mariadb:11.8", 64<<30 + 0, nil, 60 << 30, 0}, // a sixteenth
		{"mariadb:11.8", 100*mi + 12345, nil, (100*mi + 12345 - (100*mi+12345)/16) / (64 << 10) * (64 << 10), 0},
		{"mariadb:11.8", 1 << 30, &v1alpha1.MySQLSpec{SessionTempSpacePercent: ptr.To[int32](25)}, 960 * mi, 240 * mi},
		{"mariadb:11.8", 16 * mi, &v1alpha1.MySQLSpec{SessionTempSpacePercent: ptr.To[int32](1)}, 14 * mi, 128 << 10}, // 146800 bytes, rounded down
		{"mariadb:11.8", 1 << 30, &v1alpha1.MySQLSpec{TempSpaceLimit: v1alpha1.TempSpaceLimitNone}, 0, 0},
		{"mariadb:11.5", 1 << 30, nil, 960 * mi, 0}, // the floating tag pulls 11.5.1 or later
		{"mariadb:11.5.0", 1 << 30, nil, 0, 0},      // other names in 11.5.0
		{"mariadb:11.4", 1 << 30, nil, 0, 0},        // no such limit before 11.5
		{"mariadb", 1 << 30, nil, 960 * mi, 0},      // latest
		{"bitnami/mariadb:11.8", 1 << 30, nil, 960 * mi, 0},
		{"mysql:9.7", 1 << 30, nil, 0, 0},
		{"percona/percona-server:8.4", 1 << 30, nil, 0, 0},
	} {
		p, err := Detect(c.image, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.image, err)
		}
		l := DefaultLayout(p, testMountPath, c.spec)
		l.LimitTempSpace(p, c.size, c.spec)
		if l.TempSpaceLimit != c.total || l.SessionTempSpaceLimit != c.perSes {
			t.Errorf("%s, %d bytes, %+v: limits %d and %d, want %d and %d", c.image, c.size, c.spec, l.TempSpaceLimit, l.SessionTempSpaceLimit, c.total, c.perSes)
		}
		if l.TempSpaceLimit%(64<<10) != 0 || l.SessionTempSpaceLimit%(64<<10) != 0 || l.TempSpaceLimit > c.size-2*mi {
			t.Errorf("%s: limit %d is not whole 64 KiB blocks at least 2 MiB below %d", c.image, l.TempSpaceLimit, c.size)
		}
		cnf, args := string(RenderDropIn(p, l)), strings.Join(Args(p, l), " ")
		if has := strings.Contains(cnf, optMaxTmpTotal+" = "); has != (c.total > 0) || strings.Contains(args, "--max-tmp-total-space-usage=") != has {
			t.Errorf("%s: the drop-in or the flags disagree with a limit of %d:\n%s\n%s", c.image, c.total, cnf, args)
		}
		if has := strings.Contains(cnf, optMaxTmpSession+" = "); has != (c.perSes > 0) {
			t.Errorf("%s: the drop-in disagrees with a session limit of %d:\n%s", c.image, c.perSes, cnf)
		}
	}
}

// What the status says happens when the volume fills follows the server and where its internal
// temporary tables go.
func TestWhenFull(t *testing.T) {
	for _, c := range []struct {
		image string
		spec  *v1alpha1.MySQLSpec
		want  string
	}{
		{"mariadb:11.8", nil, "fails with the server's own error (max_tmp_total_space_usage); the server and the other sessions go on"},
		{"mariadb:11.8", &v1alpha1.MySQLSpec{SessionTempSpacePercent: ptr.To[int32](50)}, "or a session more than 480Mi"},
		{"mariadb:11.8", &v1alpha1.MySQLSpec{TempSpaceLimit: v1alpha1.TempSpaceLimitNone}, "spec.mysql.tempSpaceLimit is None"},
		{"mariadb:11.8", &v1alpha1.MySQLSpec{InnoDBTmpdir: v1alpha1.InnoDBTmpdirMemory}, "online ALTER TABLE sort files (spec.mysql.innodbTmpdir: Memory) are not counted"},
		{"mariadb:10.11", nil, "no limit of its own on temporary space: a query whose temporary data fills the volume fails with errno 28"},
		{"mysql:9.7", nil, "an on-disk internal temporary table that fills it, in a session temporary tablespace, stops the server"},
		{"mysql:9.7", &v1alpha1.MySQLSpec{SessionTempTablespaces: v1alpha1.TempTablespacesDisk}, "fails with errno 28 (No space left on device); the server and the other sessions go on"},
		{"mysql:5.7", nil, "fails with errno 28 (No space left on device); the server and the other sessions go on"},
	} {
		p, err := Detect(c.image, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := DefaultLayout(p, testMountPath, c.spec)
		l.LimitTempSpace(p, 1<<30, c.spec)
		if got := WhenFull(p, l); !strings.Contains(got, c.want) {
			t.Errorf("%s %+v: %q\nwant it to say %q", c.image, c.spec, got, c.want)
		}
	}
}
