//go:build unix

package main

// The security review's attacks on gpurent release's command line (--disk
// NaN was taken on 30154f2).
// Every endpoint is on 127.0.0.1.

import (
	"strings"
	"testing"
)

func TestAttackReleaseBadInput(t *testing.T) {
	for _, k := range []string{"RUNPOD_POD_ID", "RUNPOD_API_KEY", "CONTAINER_ID", "CONTAINER_API_KEY", "VAST_CONTAINERLABEL", "LAMBDA_API_KEY", "AutoDLContainerUUID", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("RUNPOD_POD_ID", "pod7")
	t.Setenv("RUNPOD_API_KEY", "rpa_TESTKEY0123456789")
	endpoints, calls := fakeProvider(t, providers[0], func() {})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--stop", "--yes", "--dry-run"}, "choose one"},
		{[]string{"--stop", "--wipe", "--yes"}, "--wipe: needs --store"},
		{[]string{"--destroy", "--yes"}, "--nothing-to-keep"},
		{[]string{"--stop", "--destroy"}, "one of them"},
		{[]string{}, "one of them"},
		{[]string{"--stop", "--endpoint", "runpod=ftp://127.0.0.1/"}, "http://"},
		{[]string{"--stop", "--endpoint", "runpod=file:///etc/passwd"}, "http://"},
		{[]string{"--stop", "--endpoint", "nosuch=http://127.0.0.1/"}, "want one of"},
		{[]string{"--stop", "--endpoint", "runpod"}, "NAME=URL"},
		{[]string{"--stop", "--provider", "RunPod"}, "--provider"},
		{[]string{"--stop", "--disk", "-1"}, "--disk"},
		{[]string{"--stop", "--disk", "NaN"}, "--disk"},
	} {
		code, stdout, stderr := gpurent(t, append(append([]string{"release"}, endpoints...), tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || len(calls()) != 0 {
			t.Errorf("%q: exit %d, %d requests\n%s%s", tc.args, code, len(calls()), stdout, stderr)
		}
	}
	// Credentials in an --endpoint URL are refused, and not echoed (they
	// were on 30154f2).
	code, _, stderr := gpurent(t, append(append([]string{"release"}, endpoints...), "--stop", "--endpoint", "runpod=http://me:hunter2hunter2@127.0.0.1/")...)
	if code != 2 || strings.Contains(stderr, "hunter2") {
		t.Errorf("credentials echoed: exit %d: %s", code, stderr)
	}
}
