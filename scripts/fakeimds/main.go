// Command fakeimds is a stand-in for the AWS instance metadata service on
// 127.0.0.1, for scripts/bench-preempt.sh: IMDSv2 tokens, and a spot
// interruption notice from the moment the trigger file exists. It writes
// the time it first served the notice (Unix nanoseconds) to -served, so
// the benchmark can time from the notice reaching gpurent.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	trigger := flag.String("trigger", "", "the notice is served once this file exists")
	served := flag.String("served", "", "file to write the first notice time to")
	portFile := flag.String("port-file", "", "file to write the chosen port to")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(*portFile, []byte(strconv.Itoa(port)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "fake-token")
	})
	mux.HandleFunc("GET /latest/meta-data/spot/instance-action", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aws-ec2-metadata-token") != "fake-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if _, err := os.Stat(*trigger); err != nil {
			http.NotFound(w, r)
			return
		}
		once.Do(func() {
			if *served != "" {
				os.WriteFile(*served, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644)
			}
		})
		fmt.Fprintf(w, `{"action": "terminate", "time": %q}`, time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
	})
	log.Fatal(http.Serve(ln, mux))
}
