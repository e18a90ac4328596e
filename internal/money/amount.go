// Package money reads amounts as people write them ("1,500元", "$300",
// "18CNY/h") and prices a run's time: the hourly price of the machine, a
// budget at that price, and what a session has cost.
package money

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/catalog"
)

// currencyWords are the ways people write a currency that are not its
// ISO code: 元, ¥ and RMB on Chinese platforms' pages (¥ is the yen's sign
// too, but no offer is priced in yen), $ and €.
var currencyWords = map[string]string{
	"RMB": "CNY", "元": "CNY", "¥": "CNY", "￥": "CNY", "块": "CNY",
	"$": "USD", "US$": "USD", "€": "EUR",
}

// amountPattern is a number with an optional currency before or after
// it: "300", "300USD", "2000 cny", "¥1500", "CNY1500", "1,500元".
var amountPattern = regexp.MustCompile(`^([^0-9.,+-]*?)\s*([+-]?(?:[0-9][0-9,]*(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([^0-9]*?)$`)

// thousands is a number written with commas between groups of three
// digits ("1,500", "12,000.50"); any other comma is refused, since "1,5"
// is one and a half in much of the world.
var thousands = regexp.MustCompile(`^[+-]?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]*)?([eE][+-]?[0-9]+)?$`)

// ParseAmount reads a positive amount with an optional currency before or
// after it ("300", "300USD", "2000 cny", "¥1500", "CNY1500", "1,500元");
// a bare number is in cur. run's --price and --budget and quote's
// --budget take it.
func ParseAmount(s, cur string) (float64, string, bool) {
	m := amountPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || (m[1] != "" && m[3] != "") {
		return 0, "", false
	}
	num := m[2]
	if strings.Contains(num, ",") {
		if !thousands.MatchString(num) {
			return 0, "", false
		}
		num = strings.ReplaceAll(num, ",", "")
	}
	if c := strings.TrimSpace(m[1] + m[3]); c != "" {
		cur = CurrencyCode(c)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || !catalog.IsCurrency(cur) {
		return 0, "", false
	}
	return v, cur, true
}

// CurrencyCode is the ISO code a person's way of writing a currency
// stands for: "cny", "RMB", "元" and "¥" are all CNY.
func CurrencyCode(s string) string {
	c := strings.ToUpper(strings.TrimSpace(s))
	if w, ok := currencyWords[c]; ok {
		return w
	}
	return c
}
