package mysql

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
)

// FindOption returns the value a mysqld command line gives the option name, as mysqld would
// read it: "--name=value" or "--name value", '-' and '_' interchangeable in the name, with or
// without the "--loose-" prefix, the last occurrence winning. A bare "--name" is found with an
// empty value.
func FindOption(args []string, name string) (value string, found bool) {
	want := normalizeOptionName(name)
	for i := 0; i < len(args); i++ {
		got, v, hasValue, ok := splitLongOption(args[i])
		if !ok || got != want {
			continue
		}
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			v = args[i]
		}
		value, found = v, true
	}
	return value, found
}

// splitLongOption splits "--[loose-]name[=value]" into the normalized name and the value.
func splitLongOption(arg string) (name, value string, hasValue, ok bool) {
	rest, isLong := strings.CutPrefix(arg, "--")
	if !isLong {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(rest, "=")
	name = normalizeOptionName(name)
	name = strings.TrimPrefix(name, "loose_")
	return name, value, hasValue, name != ""
}

func normalizeOptionName(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}

// BufferPoolSize reads innodb_buffer_pool_size from a mysqld command line, in bytes. mysqld
// accepts a plain number or one with a K, M, G, T, P or E suffix in either case, each a factor
// of 1024. found is true whenever the option is present, also when its value is malformed.
func BufferPoolSize(args []string) (bytes int64, found bool, err error) {
	return sizeOption(args, optBufferPoolSize)
}

// TempTableMaxRAM reads temptable_max_ram, the memory MySQL 8's TempTable engine may take for
// in-memory internal temporary tables before it spills, like BufferPoolSize.
func TempTableMaxRAM(args []string) (bytes int64, found bool, err error) {
	return sizeOption(args, optTempTableMaxRAM)
}

func sizeOption(args []string, name string) (bytes int64, found bool, err error) {
	v, found := FindOption(args, name)
	if !found {
		return 0, false, nil
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, true, fmt.Errorf("invalid %s %q: %w", name, v, err)
	}
	return n, true, nil
}

// parseSize parses mysqld's size syntax: digits, then at most one binary-multiple suffix.
func parseSize(s string) (int64, error) {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	digits, suffix := s[:end], s[end:]
	if digits == "" {
		return 0, errors.New("it must start with a non-negative whole number")
	}
	shift := 0
	if suffix != "" {
		i := strings.Index("KMGTPE", strings.ToUpper(suffix))
		if len(suffix) != 1 || i < 0 {
			return 0, fmt.Errorf("unknown suffix %q (use K, M, G, T, P or E)", suffix)
		}
		shift = 10 * (i + 1)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, errors.New("it does not fit in 64 bits")
	}
	return n << shift, nil
}

// DropInOverriddenBy lists what on a mysqld command line would defeat the drop-in file: options
// the file sets (the command line beats option files), and --defaults-file or --no-defaults,
// which stop the server from reading the image's my.cnf and so its include directory. Names are
// returned as the command line spells them, in the order checked.
func DropInOverriddenBy(args []string, p Profile) []string {
	names := []string{optTmpdir, optReplicaLoadTmpdir, optSlaveLoadTmpdir}
	if p.InnoDBTmpdir {
		names = append(names, optInnoDBTmpdir)
	}
	if p.SessionTempTablespaces {
		names = append(names, optTempTablespaces)
	}
	names = append(names, "defaults-file", "no-defaults")
	var hits []string
	for _, n := range names {
		if _, ok := FindOption(args, n); ok {
			hits = append(hits, "--"+strings.ReplaceAll(n, "_", "-"))
		}
	}
	return hits
}

// tmpdirRemovingScripts are start scripts known to remove, at every start and under set -e, the
// directory the option files name as tmpdir: the Percona Operator for MySQL's ps-entrypoint.sh
// (percona-server-mysql-operator, build/ps-entrypoint.sh: TMPDIR from my_print_defaults' [mysqld]
// tmpdir, then rm -rfv "$TMPDIR"). It reads option files only, not the command line.
var tmpdirRemovingScripts = []string{"ps-entrypoint.sh"}

// TmpdirRemovedBy returns the word of a container's command line that runs a start script which
// removes the option files' tmpdir at every start, "" when none does. Such a script cannot take a
// tmpdir at a mount point: the removal fails on the busy mount point and stops the container.
func TmpdirRemovedBy(command []string) string {
	for _, w := range command {
		for _, s := range tmpdirRemovingScripts {
			if path.Base(w) == s {
				return w
			}
		}
	}
	return ""
}
