package render

import (
	"github.com/gpurent/gpurent/internal/billing"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// The words the tables share, in the printer's language. English keeps
// the code's own words (report.Count's plurals, the plan's JSON name), so
// its output is what it always was.

// Count is "3 items" ("1 item"): report.Count in English, and the
// counting words of the printer's language for the nouns gpurent counts.
func Count(tr *i18n.Printer, n int, noun string) string {
	if tr.Lang() == i18n.English {
		return report.Count(n, noun)
	}
	switch noun {
	case "day":
		return tr.Tf("%d days", n)
	case "start":
		return tr.Tf("%d starts", n)
	case "row":
		return tr.Tf("%d rows", n)
	case "item":
		return tr.Tf("%d items", n)
	case "file":
		return tr.Tf("%d files", n)
	case "path":
		return tr.Tf("%d paths", n)
	case "GPU":
		return tr.Tf("%d GPUs", n)
	case "offer":
		return tr.Tf("%d offers", n)
	case "provider":
		return tr.Tf("%d providers", n)
	case "checkpoint":
		return tr.Tf("%d checkpoints", n)
	case "problem":
		return tr.Tf("%d problems", n)
	case "leftover object":
		return tr.Tf("%d leftover objects", n)
	case "log session":
		return tr.Tf("%d log sessions", n)
	case "incomplete upload":
		return tr.Tf("%d incomplete uploads", n)
	case "run":
		return tr.Tf("%d runs", n)
	}
	return report.Count(n, noun)
}

func days(tr *i18n.Printer, n int) string   { return Count(tr, n, "day") }
func starts(tr *i18n.Printer, n int) string { return Count(tr, n, "start") }
func rows(tr *i18n.Printer, n int) string   { return Count(tr, n, "row") }

// currencyName names a currency as amounts are read in it: the code in
// English, 元 (CNY) and 美元 (USD) in Chinese.
func currencyName(tr *i18n.Printer, code string) string {
	switch code {
	case "USD":
		return tr.T("USD")
	case "CNY":
		return tr.T("CNY")
	case "EUR":
		return tr.T("EUR")
	}
	return code
}

// planName is a billing plan as the platforms name it.
func planName(tr *i18n.Printer, plan string) string {
	switch plan {
	case billing.OnDemand:
		return tr.T("on_demand")
	case billing.Subscription:
		return tr.T("subscription")
	case billing.Spot:
		return tr.T("spot")
	}
	return plan
}

// periodName is a subscription period: 包日, 包周, 包月.
func periodName(tr *i18n.Printer, period string) string {
	switch period {
	case catalog.PeriodDay:
		return tr.T("day")
	case catalog.PeriodWeek:
		return tr.T("week")
	case catalog.PeriodMonth:
		return tr.T("month")
	}
	return period
}

// cheaperName is plan --inference's verdict, rent or api.
func cheaperName(tr *i18n.Printer, v string) string {
	switch v {
	case "rent":
		return tr.T("rent")
	case "api":
		return tr.T("api")
	}
	return v
}
