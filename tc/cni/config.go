// SPDX-License-Identifier: GPL-2.0
//
// The network configuration carousel-cni reads: the `bandwidth` plugin's
// keys, with its precedence and validation, and the few keys of its own.

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// Bandwidth is one set of limits, in bits per second and bits, as the
// runtime passes it in runtimeConfig.bandwidth (the CNI conventions'
// "bandwidth" capability) or as a network sets it statically.
type Bandwidth struct {
	IngressRate  uint64 `json:"ingressRate"`  // into the pod, bit/s
	IngressBurst uint64 `json:"ingressBurst"` // bits
	EgressRate   uint64 `json:"egressRate"`   // out of the pod, bit/s
	EgressBurst  uint64 `json:"egressBurst"`  // bits
}

func (bw *Bandwidth) isZero() bool {
	return bw.IngressRate == 0 && bw.IngressBurst == 0 &&
		bw.EgressRate == 0 && bw.EgressBurst == 0
}

// NetConf is the plugin's configuration.  encoding/json matches keys
// without regard to case, so the "bandWidth" spelling of upstream's
// conflists is read as "bandwidth", as the bandwidth plugin reads it.
type NetConf struct {
	types.NetConf

	RuntimeConfig struct {
		Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	} `json:"runtimeConfig,omitempty"`

	// Static limits: when present, they win over the runtime's.
	*Bandwidth

	// CEThreshold marks ECN-capable packets CE once they would wait
	// longer than this in the shaper ("5ms" by default, "0" turns it
	// off): a Go duration.
	CEThreshold string `json:"ceThreshold,omitempty"`
	// DataDir holds one state file per attachment, for DEL without
	// prevResult and for GC.
	DataDir string `json:"dataDir,omitempty"`
}

const (
	defaultCEThreshold = 5 * time.Millisecond
	defaultDataDir     = "/var/lib/cni/carousel-cni"
	// A burst leaves at line rate.  More than burstCapTime of the
	// class's rate is not a burst the class can honour without
	// defeating its rate (the runtimes' default of 2^32 - 1 bits lets
	// a 10 Mbit pod send 537 MB at once), so it is capped, and the cap
	// is logged.
	burstCapTime = 20 * time.Millisecond
	// The most the module accepts as a class rate: 2^40 bytes/s.
	rateMaxBits = (uint64(1) << 40) * 8
)

// bandwidth returns the limits that apply: the static ones if the
// network has any, else the runtime's (the bandwidth plugin's rule).
func (c *NetConf) bandwidth() *Bandwidth {
	if c.Bandwidth == nil && c.RuntimeConfig.Bandwidth != nil {
		return c.RuntimeConfig.Bandwidth
	}
	return c.Bandwidth
}

func validateRateAndBurst(rate, burst uint64) error {
	switch {
	case burst == 0 && rate != 0:
		return fmt.Errorf("if rate is set, burst must also be set")
	case rate == 0 && burst != 0:
		return fmt.Errorf("if burst is set, rate must also be set")
	case burst/8 >= math.MaxUint32:
		return fmt.Errorf("burst cannot be more than 4GB")
	case rate > rateMaxBits:
		return fmt.Errorf("rate cannot be more than %d bit/s", rateMaxBits)
	}
	return nil
}

func (c *NetConf) ceThreshold() (time.Duration, error) {
	if c.CEThreshold == "" {
		return defaultCEThreshold, nil
	}
	d, err := time.ParseDuration(c.CEThreshold)
	if err != nil || d < 0 || d > time.Second {
		return 0, fmt.Errorf("ceThreshold %q: want a duration from 0 to 1s", c.CEThreshold)
	}
	return d, nil
}

func (c *NetConf) dataDir() string {
	if c.DataDir == "" {
		return defaultDataDir
	}
	return c.DataDir
}

// parseConfigDel reads only what DEL and GC need: the network's name,
// dataDir and, for GC, cni.dev/valid-attachments.  Every other key is
// left alone, so that an attachment made under an older or broken
// configuration can still be removed: a DEL that failed on a bad key
// would stop the runtime's DEL of the whole chain, and the pod's veth and
// address would stay.  A dataDir that is not a string cannot have held
// state (ADD refuses it), so the default is used.  The valid attachments
// are read strictly: a GC that misread them would remove live pods.
func parseConfigDel(stdin []byte) (*NetConf, error) {
	var raw struct {
		Name             string          `json:"name"`
		DataDir          json.RawMessage `json:"dataDir"`
		ValidAttachments json.RawMessage `json:"cni.dev/valid-attachments"`
	}
	if err := json.Unmarshal(stdin, &raw); err != nil {
		return nil, fmt.Errorf("failed to parse network configuration: %v", err)
	}
	conf := NetConf{}
	conf.Name = raw.Name
	if len(raw.DataDir) > 0 && json.Unmarshal(raw.DataDir, &conf.DataDir) != nil {
		conf.DataDir = ""
	}
	if len(raw.ValidAttachments) > 0 {
		if err := json.Unmarshal(raw.ValidAttachments, &conf.ValidAttachments); err != nil {
			return nil, fmt.Errorf("failed to parse cni.dev/valid-attachments: %v", err)
		}
	}
	return &conf, nil
}

func parseConfig(stdin []byte) (*NetConf, error) {
	conf := NetConf{}
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, fmt.Errorf("failed to parse network configuration: %v", err)
	}
	if bw := conf.bandwidth(); bw != nil {
		if err := validateRateAndBurst(bw.IngressRate, bw.IngressBurst); err != nil {
			return nil, err
		}
		if err := validateRateAndBurst(bw.EgressRate, bw.EgressBurst); err != nil {
			return nil, err
		}
	}
	if _, err := conf.ceThreshold(); err != nil {
		return nil, err
	}
	if conf.RawPrevResult != nil {
		if err := version.ParsePrevResult(&conf.NetConf); err != nil {
			return nil, fmt.Errorf("could not parse prevResult: %v", err)
		}
		if _, err := current.NewResultFromResult(conf.PrevResult); err != nil {
			return nil, fmt.Errorf("could not convert result to current version: %v", err)
		}
	}
	return &conf, nil
}

// Limit is one direction's class, in the module's units.
type Limit struct {
	Rate      uint64 `json:"rate"`      // bytes/s
	Burst     uint32 `json:"burst"`     // bytes, after the cap
	Requested uint64 `json:"requested"` // bytes of burst asked for
}

// limit turns a rate and burst in bits into the class the module gets,
// capping the burst (see burstCapTime).  A zero rate means no limit.
func limit(rateBits, burstBits uint64) *Limit {
	if rateBits == 0 {
		return nil
	}
	l := &Limit{Rate: rateBits / 8, Requested: burstBits / 8}
	if l.Rate == 0 {
		l.Rate = 1
	}
	capBytes := uint64(math.MaxUint32)
	if l.Rate <= math.MaxUint64/uint64(burstCapTime) {
		capBytes = l.Rate * uint64(burstCapTime) / uint64(time.Second)
	}
	burst := l.Requested
	if burst > capBytes {
		burst = capBytes
	}
	if burst > math.MaxUint32 {
		burst = math.MaxUint32
	}
	l.Burst = uint32(burst)
	return l
}

func (l *Limit) capped() bool {
	return l != nil && uint64(l.Burst) < l.Requested
}
