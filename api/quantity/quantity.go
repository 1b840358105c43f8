// Package quantity writes amounts of bytes for people, in every message, Event, table and status
// text of the operator and the node agent. Messages, Events and status text use the units
// manifests use (Ki, Mi, Gi, k, M, G), so that what they say can be pasted into a ScratchVolume as
// it is: Exact and Bytes for amounts a user writes, Approx for measurements. The node agent's
// result table spells units out (Spaced), as its readers compare them with dd and fio.
package quantity

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	ki = 1 << 10
	mi = 1 << 20
	gi = 1 << 30
)

// Exact writes q exact and in its canonical form, whatever spelling its parts had: in binary units
// (768Mi) unless decimal ones are shorter (2G rather than 1953125Ki), never in milli-units. A
// fraction of a byte counts as a whole byte, as the kubelet rounds it up; a value beyond int64
// cannot be an amount of memory. It is for amounts a user wrote or must write: sizes and limits.
func Exact(q resource.Quantity) string {
	if q.CmpInt64(math.MaxInt64) > 0 {
		return "more than 8Ei"
	}
	binary := resource.NewQuantity(q.Value(), resource.BinarySI).String()
	if decimal := resource.NewQuantity(q.Value(), resource.DecimalSI).String(); len(decimal) < len(binary) {
		return decimal
	}
	return binary
}

// Bytes writes n bytes as Exact does.
func Bytes(n int64) string { return Exact(*resource.NewQuantity(n, resource.BinarySI)) }

// Approx writes n bytes rounded as a person reading a measurement would: Ki below a mebibyte, Mi
// below a gibibyte, Gi with at most one decimal above, each rounded up but the last.
func Approx(n int64) string {
	switch {
	case n < mi:
		return fmt.Sprintf("%dKi", (n+1023)/1024)
	case n < 1024*mi:
		return fmt.Sprintf("%dMi", (n+mi-1)/mi)
	}
	gi := math.Round(float64(n)/(1024*mi)*10) / 10
	return strings.TrimSuffix(fmt.Sprintf("%.1f", gi), ".0") + "Gi"
}

// Spaced writes n bytes the way a size given on a command line most likely was: binary units when
// it is a whole number of them (128 MiB), decimal ones otherwise (5 MB), plain bytes below that
// (5000 B).
func Spaced(n int64) string {
	switch {
	case n >= gi && n%gi == 0:
		return strconv.FormatInt(n/gi, 10) + " GiB"
	case n >= mi && n%mi == 0:
		return strconv.FormatInt(n/mi, 10) + " MiB"
	case n >= ki && n%ki == 0:
		return strconv.FormatInt(n/ki, 10) + " KiB"
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + " MB"
	default:
		return strconv.FormatInt(n, 10) + " B"
	}
}
