package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
)

// parseAmount reads a positive amount with an optional currency code after
// it ("300", "300USD", "2000 cny"); a bare number is in cur. run's --price
// and --budget and quote's --budget take it.
func parseAmount(s, cur string) (float64, string, bool) {
	t := strings.TrimSpace(s)
	num := strings.TrimRight(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
	if c := strings.ToUpper(strings.TrimSpace(t[len(num):])); c != "" {
		cur = c
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || !catalog.IsCurrency(cur) {
		return 0, "", false
	}
	return v, cur, true
}
