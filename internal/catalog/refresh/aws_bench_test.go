//go:build unix

package refresh

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writeOfferFile writes an EC2 offer file of about mb megabytes in the
// Price List's layout: products, then on-demand and reserved terms (the
// reserved ones are most of a real file). Written as it goes: the writer
// holds none of it.
func writeOfferFile(tb testing.TB, path string, mb int) int64 {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	const perSKU = 2000 // bytes a SKU takes, all sections together, about
	n := mb << 20 / perSKU
	typ := func(i int) string {
		if i == n/2 {
			return "p5.48xlarge"
		}
		return fmt.Sprintf("x%d.large", i%5000)
	}
	fmt.Fprint(w, `{"formatVersion":"v1.0","offerCode":"AmazonEC2","version":"20261201000000","products":{`)
	for i := range n {
		if i > 0 {
			w.WriteString(",")
		}
		fmt.Fprintf(w, `"SKU%08d":{"sku":"SKU%08d","productFamily":"Compute Instance","attributes":{"servicecode":"AmazonEC2","location":"US East (N. Virginia)","locationType":"AWS Region","instanceType":%q,"currentGeneration":"Yes","instanceFamily":"Accelerated Computing","vcpu":"192","physicalProcessor":"AMD EPYC 7R13 Processor","memory":"2048 GiB","storage":"8 x 3840 NVMe SSD","networkPerformance":"3200 Gigabit","gpu":"8","gpuMemory":"640 GB","operatingSystem":"Linux","licenseModel":"No License required","tenancy":"Shared","preInstalledSw":"NA","capacitystatus":"Used","regionCode":"us-east-1"}}`, i, i, typ(i))
	}
	fmt.Fprint(w, `},"terms":{"OnDemand":{`)
	for i := range n {
		if i > 0 {
			w.WriteString(",")
		}
		fmt.Fprintf(w, `"SKU%08d":{"SKU%08d.JRTCKXETXF":{"offerTermCode":"JRTCKXETXF","sku":"SKU%08d","effectiveDate":"2026-12-01T00:00:00Z","priceDimensions":{"SKU%08d.JRTCKXETXF.6YS6EN2CT7":{"rateCode":"SKU%08d.JRTCKXETXF.6YS6EN2CT7","description":"$%d.00 per On Demand Linux Instance Hour","beginRange":"0","endRange":"Inf","unit":"Hrs","pricePerUnit":{"USD":"%d.0000000000"},"appliesTo":[]}},"termAttributes":{}}}`, i, i, i, i, i, i%97+1, i%97+1)
	}
	fmt.Fprint(w, `},"Reserved":{`)
	for i := range n {
		if i > 0 {
			w.WriteString(",")
		}
		fmt.Fprintf(w, `"SKU%08d":{`, i)
		for k, term := range []string{"4NA7Y494T4", "6QCMYABX3D", "BPH4J8HBKS"} {
			if k > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `"SKU%08d.%s":{"offerTermCode":"%s","priceDimensions":{"a":{"unit":"Quantity","pricePerUnit":{"USD":"30000"}},"b":{"unit":"Hrs","pricePerUnit":{"USD":"1.5"}}},"termAttributes":{"LeaseContractLength":"1yr","OfferingClass":"standard","PurchaseOption":"Partial Upfront"}}`, i, term, term)
		}
		w.WriteString("}")
	}
	fmt.Fprint(w, `}}}`)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	st, _ := f.Stat()
	return st.Size()
}

// BenchmarkAWSOnDemand300MB streams a 300 MB offer file and reports the
// process's peak resident memory (run it alone: the peak is the
// process's): docs/BENCHMARKS.md.
func BenchmarkAWSOnDemand300MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "index.json")
	size := writeOfferFile(b, path, 300)
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		got, err := awsOnDemand(bufio.NewReaderSize(f, 1<<16), map[string]bool{"p5.48xlarge": true})
		f.Close()
		if err != nil || got["p5.48xlarge"] <= 0 {
			b.Fatal(got, err)
		}
	}
	b.StopTimer()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	b.ReportMetric(float64(size)/(1<<20), "file-MB")
}

// TestAWSOnDemandStreamsALargeFile parses a 20 MB file in the same layout:
// the parser's answer, not its memory (the benchmark measures that).
func TestAWSOnDemandStreamsALargeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.json")
	writeOfferFile(t, path, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := awsOnDemand(f, map[string]bool{"p5.48xlarge": true})
	if err != nil || len(got) != 1 || got["p5.48xlarge"] <= 0 {
		t.Fatal(got, err)
	}
}

// BenchmarkAWSWholeFile300MB is the peer: the file read whole and
// decoded with encoding/json into the same types (the reserved terms
// left out by the types), as a price list is usually read. Run it alone.
func BenchmarkAWSWholeFile300MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "index.json")
	size := writeOfferFile(b, path, 300)
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		var doc struct {
			Products map[string]awsProduct `json:"products"`
			Terms    struct {
				OnDemand map[string]map[string]awsTerm `json:"OnDemand"`
			} `json:"terms"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || len(doc.Products) == 0 {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	b.ReportMetric(float64(size)/(1<<20), "file-MB")
}
