// Package method is the measuring method every benchmark of the project shares: the variants of a
// comparison run in an order drawn anew for each round from a recorded seed, two variants are
// compared by a bootstrap confidence interval for the ratio of their medians over all runs, a
// difference is claimed only when that interval excludes 1, and the conditions of the machine are
// recorded with every run.
//
// It holds no thresholds of its own: a ratio of 1.06 is "no difference" when the runs scatter by
// ±25 %, and a ratio of 1.02 is a difference when they agree to a tenth of a percent.
package method

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Order draws the order of the variants of each round. Drawn anew for each round, the order
// keeps drift of the machine and warm-up from falling on one variant; drawn from a recorded seed,
// the same seed gives the same orders again.
type Order struct {
	seed int64
	rng  *rand.Rand
}

// NewOrder draws orders from seed.
func NewOrder(seed int64) *Order {
	return &Order{seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 0))}
}

// NewSeed is a seed for a run that was given none: the clock's nanoseconds.
func NewSeed() int64 { return time.Now().UnixNano() }

// Seed is the seed the orders are drawn from, to record with the results.
func (o *Order) Seed() int64 { return o.seed }

// Shuffled returns the variants in the order of the next round; variants is left as it is.
// Successive calls continue one sequence, so a benchmark that draws its rounds in the same order
// from the same seed runs its variants in the same orders.
func Shuffled[T any](o *Order, variants []T) []T {
	out := slices.Clone(variants)
	o.rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// Ordinal names a turn in a round: 1st, 2nd, 3rd, 4th…
func Ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}
