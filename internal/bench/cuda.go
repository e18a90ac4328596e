package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// cudaFamilyDriver is the least driver each CUDA major release runs on:
// by CUDA's minor version compatibility an application built with any
// 12.x toolkit runs, "with limited feature-set", on a 525 driver or newer,
// a 13.x one on 580 or newer (NVIDIA, CUDA Compatibility, "Minor Version
// Compatibility", table 1: docs.nvidia.com/deploy/cuda-compatibility/
// minor-version-compatibility.html, read 2026-12-01). A driver that
// reports CUDA 12.2 is therefore new enough for all of 12.x.
var cudaFamilyDriver = map[int]string{11: "450.80.02", 12: "525", 13: "580"}

// cudaVersion reads a CUDA version such as "12.8" or "13".
func cudaVersion(v string) (major, minor int, ok bool) {
	a, b, dot := strings.Cut(v, ".")
	major, err := strconv.Atoi(a)
	if err != nil || major <= 0 {
		return 0, 0, false
	}
	if dot {
		if minor, err = strconv.Atoi(b); err != nil || minor < 0 {
			return 0, 0, false
		}
	}
	return major, minor, true
}

// cuda judges the driver's CUDA version against what the software needs:
// --expect-cuda, and each PyTorch found, by the CUDA it was built with. A
// container cannot change the driver, so a driver too old for the image's
// PyTorch makes the machine useless for it, which is best known within the
// first billing increment.
func (j *judge) cuda() {
	g := j.f.GPU
	c := Check{ID: "gpu.cuda", Status: Pass}
	type need struct {
		who  i18n.Text
		cuda string
	}
	var needs []need
	if j.order.CUDA != "" {
		needs = append(needs, need{i18n.Textf("software built with CUDA %s (--expect-cuda)", j.order.CUDA), j.order.CUDA})
	}
	var noCUDA []i18n.Text
	for _, t := range j.f.Torch {
		who := i18n.Textf("PyTorch %s (%s)", t.Version, t.Path)
		if t.CUDA != "" {
			who = i18n.Textf("PyTorch %s, built with CUDA %s (%s),", t.Version, t.CUDA, t.Path)
		}
		switch {
		case t.CUDA != "":
			needs = append(needs, need{who, t.CUDA})
		case t.HIP != "":
			noCUDA = append(noCUDA, i18n.Textf("%s is a ROCm build", who))
		default:
			noCUDA = append(noCUDA, i18n.Textf("%s is a CPU-only build", who))
		}
	}
	if g.CUDADriverVersion <= 0 {
		if len(needs) == 0 {
			return
		}
		c.Status, c.Evidence = Skip, i18n.Textf("the driver did not report the CUDA version it supports")
		j.add(c)
		return
	}
	dMajor, dMinor := g.CUDADriverVersion/1000, g.CUDADriverVersion%1000/10
	c.Measured = fmt.Sprintf("CUDA %d.%d", dMajor, dMinor)
	ev := []i18n.Text{i18n.Textf("driver %s supports CUDA %d.%d: software built with CUDA %d.x or older runs", g.DriverVersion, dMajor, dMinor, dMajor)}
	var short []i18n.Text
	hiMajor, hiMinor := -1, -1
	for _, n := range needs {
		major, minor, ok := cudaVersion(n.cuda)
		if !ok {
			continue
		}
		if major > hiMajor || (major == hiMajor && minor > hiMinor) {
			hiMajor, hiMinor, c.Expected = major, minor, "CUDA "+n.cuda
		}
		switch {
		case major > dMajor:
			s := i18n.Textf("%s needs a driver that supports CUDA %d", n.who, major)
			if least := cudaFamilyDriver[major]; least != "" {
				s = i18n.Textf("%s needs a driver that supports CUDA %d (%s or newer)", n.who, major, least)
			}
			short = append(short, s)
		case major == dMajor && minor > dMinor:
			ev = append(ev, i18n.Textf("%s runs by CUDA's minor version compatibility", n.who))
		default:
			ev = append(ev, i18n.Textf("%s runs", n.who))
		}
	}
	switch {
	case len(short) > 0:
		c.Status = Fail
		c.Evidence = i18n.Textf("%s; %s", i18n.Join(short, "; "), i18n.Join(ev, "; "))
		c.Advice = i18n.Textf("This driver is too old for that software, and a container cannot change it: ask for a machine with a newer driver within the first billing increment, or install a build made for CUDA %d.x or older.", dMajor)
	case len(noCUDA) > 0 && len(needs) == 0:
		c.Status = Warn
		c.Advice = i18n.Textf("A PyTorch without CUDA does not use the GPU: install a CUDA build of PyTorch.")
		ev = append(ev, noCUDA...)
		c.Evidence = i18n.Join(ev, "; ")
	default:
		c.Evidence = i18n.Join(append(ev, noCUDA...), "; ")
	}
	j.add(c)
}
