package release

import (
	"strconv"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Costs says what each choice goes on costing, from offer o's catalog
// entry, for diskGB of disk kept (0: the offer's included disk): a day
// stopped, and what the platform does with a stopped machine. Unknown
// fees are said to be unknown, never taken as zero.
func Costs(o *catalog.Offer, diskGB float64) []i18n.Text {
	if diskGB <= 0 {
		diskGB = o.Storage.IncludedGB.Or(0)
	}
	var stopped i18n.Text
	rate, known := o.Storage.StoppedGBMonth.Value()
	switch {
	case diskGB <= 0:
		stopped = i18n.Textf("stopped: the disk's size is unknown (--disk GB): at %s %s/GB-month while stopped", o.Storage.StoppedGBMonth, o.Currency)
	case !known:
		stopped = i18n.Textf("stopped: %s GB at an unknown price while stopped (offer %s states none)", num(diskGB), o.ID)
	default:
		day := diskGB * rate / 30
		stopped = i18n.Textf("stopped: %s GB at %s %s/GB-month = %.2f %s a day", num(diskGB), num(rate), o.Currency, day, o.Currency)
	}
	if ip, ok := o.IPMonth.Value(); ok && ip > 0 {
		stopped = i18n.Textf("%s, plus its IP at %s %s a month", stopped, num(ip), o.Currency)
	}
	if o.ReleaseAfterStopped.IsKnown() && !o.ReleaseAfterStopped.IsNever() {
		stopped = i18n.Textf("%s, released by the platform after %s stopped", stopped, o.ReleaseAfterStopped)
	}
	return []i18n.Text{stopped, i18n.Textf("destroyed: 0 %s a day for the machine; volumes the provider keeps after a destroy (said above) bill on", o.Currency)}
}

// num writes a figure without trailing zeros.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
