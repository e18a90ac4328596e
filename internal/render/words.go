package render

import (
	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// The words the tables share, in the printer's language. English keeps
// the code's own words (report.Count's plurals, the values JSON holds),
// so its output is what it always was. Each vocabulary lists its words
// with i18n.Key, which is how the catalog's test finds them.

// vocabulary is a set of values that are their own English words.
type vocabulary map[string]bool

func words(ws ...string) vocabulary {
	v := vocabulary{}
	for _, w := range ws {
		v[w] = true
	}
	return v
}

// say is w in the printer's language when it is one of v's words, else w.
func (v vocabulary) say(tr *i18n.Printer, w string) string {
	if v[w] {
		return tr.Lookup(w)
	}
	return w
}

var (
	// currencies are read as 元 (CNY) and 美元 (USD) in Chinese.
	currencies = words(i18n.Key("USD"), i18n.Key("CNY"), i18n.Key("EUR"))
	// plans are the billing plans as the platforms name them.
	plans = words(i18n.Key(billing.OnDemand), i18n.Key(billing.Subscription), i18n.Key(billing.Spot))
	// periods are a subscription's: 包日, 包周, 包月.
	periods = words(i18n.Key(catalog.PeriodDay), i18n.Key(catalog.PeriodWeek), i18n.Key(catalog.PeriodMonth))
	// verdicts are plan --inference's: rent or api.
	verdicts = words(i18n.Key("rent"), i18n.Key("api"))
	// statuses are a check's.
	statuses = words(i18n.Key(check.Pass), i18n.Key(check.Warn), i18n.Key(check.Fail), i18n.Key(check.Skip))
	// units are the counted things of a check; measures (GB/s, W, %) are
	// the same in every language.
	checkUnits = words(i18n.Key("CPUs"), i18n.Key("GPUs"), i18n.Key("GPUs slower"), i18n.Key("blind spots"), i18n.Key("bytes"),
		i18n.Key("directories"), i18n.Key("entries"), i18n.Key("errors"), i18n.Key("files"), i18n.Key("keys"),
		i18n.Key("links"), i18n.Key("other users"), i18n.Key("pages"), i18n.Key("pairs"), i18n.Key("processes"),
		i18n.Key("reasons"), i18n.Key("rows"), i18n.Key("services"), i18n.Key("sockets"), i18n.Key("words"))
	// counted are the nouns Count says in other languages, each with its
	// message.
	counted = map[string]string{
		"day": i18n.Key("%d days"), "start": i18n.Key("%d starts"), "row": i18n.Key("%d rows"),
		"item": i18n.Key("%d items"), "file": i18n.Key("%d files"), "path": i18n.Key("%d paths"),
		"GPU": i18n.Key("%d GPUs"), "offer": i18n.Key("%d offers"), "provider": i18n.Key("%d providers"),
		"checkpoint": i18n.Key("%d checkpoints"), "problem": i18n.Key("%d problems"),
		"leftover object": i18n.Key("%d leftover objects"), "log session": i18n.Key("%d log sessions"),
		"incomplete upload": i18n.Key("%d incomplete uploads"), "run": i18n.Key("%d runs"),
	}
)

// Count is "3 items" ("1 item"): report.Count in English, and the
// counting words of the printer's language for the nouns gpurent counts.
func Count(tr *i18n.Printer, n int, noun string) string {
	if f, ok := counted[noun]; ok && tr.Lang() != i18n.English {
		return tr.Text(i18n.Text{Format: f, Args: []any{n}})
	}
	return report.Count(n, noun)
}

func days(tr *i18n.Printer, n int) string   { return Count(tr, n, "day") }
func starts(tr *i18n.Printer, n int) string { return Count(tr, n, "start") }
func rows(tr *i18n.Printer, n int) string   { return Count(tr, n, "row") }

func currencyName(tr *i18n.Printer, code string) string { return currencies.say(tr, code) }
func planName(tr *i18n.Printer, plan string) string     { return plans.say(tr, plan) }
func periodName(tr *i18n.Printer, p string) string      { return periods.say(tr, p) }
func cheaperName(tr *i18n.Printer, v string) string     { return verdicts.say(tr, v) }
func statusName(tr *i18n.Printer, s string) string      { return statuses.say(tr, s) }
func unitName(tr *i18n.Printer, unit string) string     { return checkUnits.say(tr, unit) }
