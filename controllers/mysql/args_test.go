package mysql

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindOption(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		option    string
		wantValue string
		wantFound bool
	}{
		{"equals form", []string{"--tmpdir=/a"}, "tmpdir", "/a", true},
		{"separate value", []string{"--tmpdir", "/a"}, "tmpdir", "/a", true},
		{"dashes in the argument", []string{"--innodb-buffer-pool-size=1G"}, "innodb_buffer_pool_size", "1G", true},
		{"dashes in the name asked for", []string{"--innodb_buffer_pool_size=1G"}, "innodb-buffer-pool-size", "1G", true},
		{"mixed separators", []string{"--innodb_buffer-pool_size=1G"}, "innodb_buffer_pool_size", "1G", true},
		{"loose prefix", []string{"--loose-innodb-tmpdir=/it"}, "innodb_tmpdir", "/it", true},
		{"loose prefix with underscore", []string{"--loose_innodb_tmpdir=/it"}, "innodb_tmpdir", "/it", true},
		{"last occurrence wins", []string{"--tmpdir=/a", "--tmpdir", "/b"}, "tmpdir", "/b", true},
		{"program name first", []string{"mysqld", "--user=mysql", "--tmpdir=/a"}, "tmpdir", "/a", true},
		{"value containing equals", []string{"--init-connect=SET a=1"}, "init_connect", "SET a=1", true},
		{"empty value", []string{"--tmpdir="}, "tmpdir", "", true},
		{"bare flag", []string{"--skip-name-resolve"}, "skip_name_resolve", "", true},
		{"bare flag before another option", []string{"--tmpdir", "--user=mysql"}, "tmpdir", "", true},
		{"value of another option is not taken", []string{"--log-error", "/x", "--tmpdir=/a"}, "log_error", "/x", true},
		{"absent", []string{"--datadir=/d"}, "tmpdir", "", false},
		{"no prefix matching", []string{"--tmpdirs=/a"}, "tmpdir", "", false},
		{"longer option sharing a prefix", []string{"--tmpdir=/a"}, "tmp", "", false},
		{"single dash is not a long option", []string{"-tmpdir=/a"}, "tmpdir", "", false},
		{"names are case-sensitive", []string{"--TMPDIR=/a"}, "tmpdir", "", false},
		{"no args", nil, "tmpdir", "", false},
		{"bare double dash", []string{"--", "--=x"}, "tmpdir", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, found := FindOption(tt.args, tt.option)
			if value != tt.wantValue || found != tt.wantFound {
				t.Errorf("FindOption(%q, %q) = %q, %v; want %q, %v",
					tt.args, tt.option, value, found, tt.wantValue, tt.wantFound)
			}
		})
	}
}

func TestBufferPoolSize(t *testing.T) {
	const option = "--innodb-buffer-pool-size="
	tests := []struct {
		name      string
		args      []string
		want      int64
		wantFound bool
		wantErr   string
	}{
		{"absent", []string{"--tmpdir=/a"}, 0, false, ""},
		{"bytes", []string{option + "134217728"}, 134217728, true, ""},
		{"kibibytes", []string{option + "512K"}, 512 << 10, true, ""},
		{"lower-case suffix", []string{option + "128m"}, 128 << 20, true, ""},
		{"mebibytes", []string{option + "128M"}, 128 << 20, true, ""},
		{"gibibytes", []string{option + "2g"}, 2 << 30, true, ""},
		{"tebibytes", []string{option + "1T"}, 1 << 40, true, ""},
		{"pebibytes", []string{option + "1p"}, 1 << 50, true, ""},
		{"largest exbibyte count", []string{option + "7E"}, 7 << 60, true, ""},
		{"zero", []string{option + "0"}, 0, true, ""},
		{"separate value and underscores", []string{"--innodb_buffer_pool_size", "3G"}, 3 << 30, true, ""},
		{"loose prefix", []string{"--loose-innodb-buffer-pool-size=64M"}, 64 << 20, true, ""},
		{"last one wins", []string{option + "1G", option + "2G"}, 2 << 30, true, ""},
		{"bad suffix", []string{option + "12X"}, 0, true,
			`invalid innodb_buffer_pool_size "12X": unknown suffix "X" (use K, M, G, T, P or E)`},
		{"two-letter suffix", []string{option + "1GB"}, 0, true,
			`invalid innodb_buffer_pool_size "1GB": unknown suffix "GB" (use K, M, G, T, P or E)`},
		{"fraction", []string{option + "1.5G"}, 0, true,
			`invalid innodb_buffer_pool_size "1.5G": unknown suffix ".5G" (use K, M, G, T, P or E)`},
		{"suffix only", []string{option + "G"}, 0, true,
			`invalid innodb_buffer_pool_size "G": it must start with a non-negative whole number`},
		{"empty", []string{option}, 0, true,
			`invalid innodb_buffer_pool_size "": it must start with a non-negative whole number`},
		{"negative", []string{option + "-1"}, 0, true,
			`invalid innodb_buffer_pool_size "-1": it must start with a non-negative whole number`},
		{"overflow by suffix", []string{option + "8E"}, 0, true,
			`invalid innodb_buffer_pool_size "8E": it does not fit in 64 bits`},
		{"overflow by digits", []string{option + "99999999999999999999"}, 0, true,
			`invalid innodb_buffer_pool_size "99999999999999999999": it does not fit in 64 bits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := BufferPoolSize(tt.args)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || found != tt.wantFound || gotErr != tt.wantErr {
				t.Errorf("BufferPoolSize(%q) = %d, %v, %q; want %d, %v, %q",
					tt.args, got, found, gotErr, tt.want, tt.wantFound, tt.wantErr)
			}
		})
	}
}

func TestDropInOverriddenBy(t *testing.T) {
	tests := []struct {
		name  string
		image string
		args  []string
		want  []string
	}{
		{"nothing", "mysql:8.0", []string{"--character-set-server=utf8mb4"}, nil},
		{"options the file sets", "mysql:8.0",
			[]string{"--tmpdir=/tmp", "--slave-load-tmpdir=/x", "--loose-innodb-tmpdir=/y"},
			[]string{"--tmpdir", "--slave-load-tmpdir", "--innodb-tmpdir"}},
		{"new replica name", "mysql:8.4", []string{"--replica_load_tmpdir=/x"}, []string{"--replica-load-tmpdir"}},
		{"innodb_tmpdir the server lacks", "mysql:5.7.10", []string{"--innodb-tmpdir=/y"}, nil},
		{"bypassed option files", "bitnami/mysql:8.0",
			[]string{"--defaults-file=/opt/bitnami/mysql/conf/my.cnf", "--no-defaults"},
			[]string{"--defaults-file", "--no-defaults"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DropInOverriddenBy(tt.args, detect(t, tt.image))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DropInOverriddenBy mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
