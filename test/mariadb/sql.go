package mariadb

import (
	"fmt"
	"strings"
)

// Seq is a derived table of the integers 1 to n in its column seq, built from cross-joined digits
// so that it reads the same on every server: MariaDB's sequence engine (seq_1_to_N) has no
// counterpart on MySQL, and recursive common table expressions stop at limits each server sets
// under its own name.
func Seq(n int) string {
	digits := "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
		"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	from, sum := make([]string, 0, 10), make([]string, 0, 10)
	for i, place := 0, 1; place < n; i, place = i+1, place*10 {
		from = append(from, fmt.Sprintf("%s AS d%d", digits, i))
		sum = append(sum, fmt.Sprintf("d%d.d * %d", i, place))
	}
	if len(from) == 0 {
		return "(SELECT 1 AS seq) AS s"
	}
	return fmt.Sprintf("(SELECT 1 + %s AS seq FROM %s HAVING seq <= %d) AS s",
		strings.Join(sum, " + "), strings.Join(from, " CROSS JOIN "), n)
}

// SeqText is an SQL expression of 8*words+10 characters, read from the column seq, that differs for
// every value, in functions every server has: MySQL 9.7 as Debian builds it has no MD5(), SHA1() or
// SHA2(). Past its first ten characters (seq itself) it sorts in no relation to seq.
func SeqText(words int) string {
	return fmt.Sprintf("CONCAT(LPAD(seq, 10, '0'), REPEAT(LPAD(HEX(CRC32(seq)), 8, '0'), %d))", words)
}
