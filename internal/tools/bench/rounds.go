package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// medianRow returns the round of rows with the median rate, its note
// naming the rounds' rates.
func medianRow(rows []Row) Row {
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b Row) int { return cmp.Compare(a.Rate, b.Rate) })
	m := sorted[len(sorted)/2]
	rates := make([]string, len(rows))
	for i, r := range rows {
		rates[i] = strconv.FormatFloat(r.Rate, 'f', 0, 64)
	}
	m.Note = strings.TrimSuffix(fmt.Sprintf("median of %d rounds (msg/s %s); %s", len(rows), strings.Join(rates, ", "), m.Note), "; ")
	return m
}

// compareRounds grades r against baseline by the median of the rounds'
// ratios rows[i].Rate / bases[i].Rate (rounds run side by side: a pair
// seconds apart cancels what drifts through a run — kfake's growing log,
// the heap, other processes — which comparing two medians does not) and
// names the ratios in r's note.
func compareRounds(r *Row, rows, bases []Row, baseline string, target float64) {
	x, text, ok := medianRatio(rows, bases)
	if !ok {
		return
	}
	grade(r, x, baseline, target)
	r.Note = fmt.Sprintf("ratio: median of the rounds' ratios (%s); %s", text, r.Note)
}

// medianRatio is the median of the rounds' ratios rows[i].Rate /
// bases[i].Rate, and the ratios as text; false when there is none.
func medianRatio(rows, bases []Row) (float64, string, bool) {
	ratios := make([]float64, 0, len(rows))
	text := make([]string, 0, len(rows))
	for i := range min(len(rows), len(bases)) {
		if bases[i].Rate <= 0 {
			continue
		}
		x := rows[i].Rate / bases[i].Rate
		ratios = append(ratios, x)
		text = append(text, strconv.FormatFloat(x, 'f', 2, 64))
	}
	if len(ratios) == 0 {
		return 0, "", false
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2], strings.Join(text, ", "), true
}
