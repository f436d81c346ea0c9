package reservation

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/bits-and-blooms/bitset"

	"boxoffice/internal/product"
)

// picker chooses numbers for one claim batch. taken has bit n-1 set when
// number n is unavailable to this batch (held, sold, already given to an
// earlier request of the batch, or on a page the batch did not read);
// free counts the product's free numbers, visible those the batch may
// pick (its clear bits).
type picker struct {
	taken   *bitset.BitSet
	free    int
	visible int
	// spans are the ranges of numbers the batch read (first and last,
	// each a page of a large product); nil: all of them.
	spans [][2]int
	// withheld are free numbers the waiting list's offers keep from sale
	// (or, while people wait in line, every free number).
	withheld int
	// lineWaiting: people wait in the waiting list's line, and every free
	// number is theirs to be offered.
	lineWaiting bool
	capacity    int
	rows        []product.Row // seated products: rows in preference order
	rng         *rand.Rand
}

func (p *picker) isFree(n int32) bool {
	return n >= 1 && int(n) <= p.capacity && !p.taken.Test(uint(n-1))
}

// open is how many free numbers a request without an offer may take.
func (p *picker) open() int {
	if p.lineWaiting {
		return 0
	}
	return max(p.free-p.withheld, 0)
}

// couldHold says whether r, without an offer, may get any number from this
// batch: its snapshot shows an open number, and one of the numbers r asks
// for, if it asks for numbers, free. Numbers only get taken as the batch
// goes on, so a request that could not at the start cannot later.
func (p *picker) couldHold(r *queuedRequest) bool {
	if p.open() == 0 {
		return false
	}
	if r.quantity != nil {
		return true
	}
	return slices.ContainsFunc(r.numbers, p.isFree)
}

func (p *picker) take(nums []int32) {
	for _, n := range nums {
		p.taken.Set(uint(n - 1))
	}
	p.free -= len(nums)
	p.visible -= len(nums)
}

// lowest returns the q lowest free numbers, in row order for seated products.
func (p *picker) lowest(q int) []int32 {
	out := make([]int32, 0, q)
	for i, ok := p.taken.NextClear(0); ok && int(i) < p.capacity && len(out) < q; i, ok = p.taken.NextClear(i + 1) {
		out = append(out, int32(i+1))
	}
	return out
}

// best picks q adjacent seats in one row, preferring rows in layout order and
// placements that leave no single orphan seat; numbered products get the
// lowest free numbers. When no row has q adjacent free seats it falls back to
// the first free seats in preference order. The caller ensures free >= q.
//
// Rows are numbered consecutively in preference order, so the scan jumps from
// free seat to free seat and never walks through full rows: picking stays
// cheap when the front of a stadium is sold out.
func (p *picker) best(q int) []int32 {
	if len(p.rows) == 0 {
		return p.lowest(q)
	}
	orphanStart := -1
	var fallback []int32
	for s, ok := p.taken.NextClear(0); ok; {
		row := p.rowOf(s)
		last := uint(row.Last - 1) // bit index of the row's last seat
		e, found := p.taken.NextSet(s)
		if !found || e > last+1 {
			e = last + 1
		}
		run := int(e - s)
		switch {
		case run == q || run >= q+2:
			// Left-aligned against a taken seat or the row's end: no gap on
			// the left, and on the right none or at least two seats.
			return seq(int32(s+1), q)
		case run == q+1 && orphanStart < 0:
			orphanStart = int(s)
		}
		for i := s; i < e && len(fallback) < q; i++ {
			fallback = append(fallback, int32(i+1))
		}
		s, ok = p.taken.NextClear(e)
	}
	if orphanStart >= 0 {
		return seq(int32(orphanStart+1), q)
	}
	return fallback
}

// rowOf returns the row holding bit index i.
func (p *picker) rowOf(i uint) product.Row {
	n := int(i) + 1
	k := sort.Search(len(p.rows), func(k int) bool { return p.rows[k].Last >= n })
	return p.rows[k]
}

// random picks q free numbers uniformly (at most the visible ones). Dense
// stock uses rejection sampling over the numbers read; sparse stock lists
// the free numbers and draws from them, so the cost stays bounded either
// way.
func (p *picker) random(q int) []int32 {
	q = min(q, p.visible)
	out := make([]int32, 0, q)
	span := p.spanned()
	if p.visible*8 >= span {
		chosen := make(map[int32]struct{}, q)
		for len(out) < q {
			n := p.nth(p.rng.IntN(span))
			if _, dup := chosen[n]; dup || !p.isFree(n) {
				continue
			}
			chosen[n] = struct{}{}
			out = append(out, n)
		}
		return out
	}
	all := p.lowest(p.visible)
	q = min(q, len(all))
	for i := 0; i < q; i++ {
		j := i + p.rng.IntN(len(all)-i)
		all[i], all[j] = all[j], all[i]
		out = append(out, all[i])
	}
	return out
}

// spanned counts the numbers the batch read.
func (p *picker) spanned() int {
	if p.spans == nil {
		return p.capacity
	}
	n := 0
	for _, s := range p.spans {
		n += s[1] - s[0] + 1
	}
	return n
}

// nth returns the i-th number (from 0) the batch read.
func (p *picker) nth(i int) int32 {
	if p.spans == nil {
		return int32(i + 1)
	}
	for _, s := range p.spans {
		if size := s[1] - s[0] + 1; i >= size {
			i -= size
			continue
		}
		return int32(s[0] + i)
	}
	panic("picker: index past the numbers read")
}

func seq(from int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = from + int32(i)
	}
	return out
}
