//go:build unix

package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/catalog"
)

// hourlyPrice is what the machine costs an hour, as --price gives it: the
// list price, which is what a person knows at hand. The bill also has
// storage, egress and the provider's rounding, which gpurent quote
// itemizes; run says so where it shows the cost.
type hourlyPrice struct {
	amount   float64
	currency string
}

// parsePrice reads "2.49", "2.49USD", "18 CNY" or "18CNY/h" (a bare
// number is USD).
func parsePrice(s string) (hourlyPrice, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "/h"))
	num := strings.TrimRight(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
	cur := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	if cur == "" {
		cur = "USD"
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v <= 0 || v > 1e6 || !catalog.IsCurrency(cur) {
		return hourlyPrice{}, fmt.Errorf("want the machine's hourly price such as 2.49, 2.49USD or 18CNY, got %q", s)
	}
	return hourlyPrice{amount: v, currency: cur}, nil
}

func (p hourlyPrice) String() string {
	return strconv.FormatFloat(p.amount, 'f', -1, 64) + " " + p.currency + "/h"
}

// cost is what d costs at p, "12.40 USD"; "" without a price.
func (p hourlyPrice) cost(d time.Duration) string {
	if p.amount == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f %s", p.amount*d.Hours(), p.currency)
}

// spent is the end's line: the cost of the time gpurent ran, and what it
// leaves out.
func (p hourlyPrice) spent(d time.Duration) string {
	return fmt.Sprintf("the machine cost about %s while gpurent ran (%s at %s; storage, egress and the provider's rounding are not in it: gpurent quote itemizes them), and bills on until it is stopped",
		p.cost(d), shortDur(d), p)
}

// costMetric is --metrics' gauge of what the machine has cost since
// begun; nothing without a price.
type costMetric struct {
	price hourlyPrice
	begun time.Time
}

func (c costMetric) WriteTo(w io.Writer) (int64, error) {
	if c.price.amount == 0 {
		return 0, nil
	}
	n, err := fmt.Fprintf(w, "# HELP gpurent_cost What the machine has cost since gpurent started, at --price (the hourly price alone).\n# TYPE gpurent_cost gauge\ngpurent_cost{currency=%q} %.4f\n",
		c.price.currency, c.price.amount*time.Since(c.begun).Hours())
	return int64(n), err
}
