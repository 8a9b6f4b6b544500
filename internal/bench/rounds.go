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
	m.Note = fmt.Sprintf("median of %d rounds (msg/s %s); %s", len(rows), strings.Join(rates, ", "), m.Note)
	return m
}
