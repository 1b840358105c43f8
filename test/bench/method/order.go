// Package method is the measuring method every benchmark of the project shares: the variants of a
// comparison run in an order drawn anew for each round from a recorded seed, every variant taking
// every turn equally often; two variants are compared by a bootstrap confidence interval for the
// ratio of their medians over all runs; a difference is claimed only when that interval excludes
// 1; and the conditions of the machine are recorded with every run.
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
// keeps drift of the machine and warm-up from falling on one variant; drawn in balanced blocks,
// it keeps any variant from taking the same turn round after round, as a fair coin does one time
// in sixteen over five rounds of two; drawn from a recorded seed, the same seed gives the same
// orders again.
type Order struct {
	seed int64
	rng  *rand.Rand
	// pending are the rounds left of the current block, by number of variants.
	pending map[int][][]int
}

// NewOrder draws orders from seed.
func NewOrder(seed int64) *Order {
	return &Order{seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 0)), pending: map[int][][]int{}}
}

// NewSeed is a seed for a run that was given none: the clock's nanoseconds.
func NewSeed() int64 { return time.Now().UnixNano() }

// Seed is the seed the orders are drawn from, to record with the results.
func (o *Order) Seed() int64 { return o.seed }

// Shuffled returns the variants in the order of the next round; variants is left as it is.
//
// The rounds come in blocks of as many rounds as there are variants, and in a block every
// variant takes every turn once: with two variants each runs first in one round of every two,
// with three each runs first, second and third once in every three. The block is a Latin square
// drawn at random (which variant is which, which turn is which, which round is which), so
// nothing else about the order is fixed. Successive calls continue one sequence, by number of
// variants: a benchmark whose rounds are not a whole number of blocks has its turns balanced to
// within one, and one that draws its rounds in the same order from the same seed runs its
// variants in the same orders.
func Shuffled[T any](o *Order, variants []T) []T {
	n := len(variants)
	if n < 2 {
		return slices.Clone(variants)
	}
	if len(o.pending[n]) == 0 {
		o.pending[n] = o.block(n)
	}
	turns := o.pending[n][0]
	o.pending[n] = o.pending[n][1:]
	out := make([]T, n)
	for i, v := range turns {
		out[i] = variants[v]
	}
	return out
}

// block draws n rounds of n variants in which every variant takes every turn once: the cyclic
// Latin square, its variants, turns and rounds each permuted at random.
func (o *Order) block(n int) [][]int {
	variant, turn := o.rng.Perm(n), o.rng.Perm(n)
	rounds := make([][]int, n)
	for r := range rounds {
		rounds[r] = make([]int, n)
		for t := range n {
			rounds[r][t] = variant[(turn[t]+r)%n]
		}
	}
	o.rng.Shuffle(n, func(a, b int) { rounds[a], rounds[b] = rounds[b], rounds[a] })
	return rounds
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
