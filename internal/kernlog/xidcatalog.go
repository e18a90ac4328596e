package kernlog

import "github.com/gpurent/gpurent/internal/i18n"

// Action is what NVIDIA's Xid catalog says to do first about an Xid: its
// "Resolution Bucket (Immediate Action)".
type Action string

// The immediate actions of NVIDIA's catalog that the table below uses.
const (
	RestartApp      Action = "RESTART_APP"     // the application's error: restart it
	Ignore          Action = "IGNORE"          // informational
	ResetGPU        Action = "RESET_GPU"       // the GPU needs a reset (nvidia-smi -r)
	RestartMachine  Action = "RESTART_BM"      // the machine needs a reboot
	RestartVM       Action = "RESTART_VM"      // the virtual machine needs a restart
	DoubleBitECC    Action = "WORKFLOW_XID_48" // an uncorrectable memory error
	Cleanup         Action = "WORKFLOW_XID_45" // the driver ended a context after another error
	NVLink          Action = "WORKFLOW_NVLINK" // an NVLink fault (Xid 74, and NVLink 5's 144 to 150)
	ReportIssue     Action = "UNEXPECTED_ERR_REPORT_ISSUE"
	CheckMechanical Action = "CHECK_MECHANICALS" // power or cooling
	UpdateSoftware  Action = "UPDATE_SWFW"       // driver or firmware
	CheckUVM        Action = "CHECK_UVM"         // unified memory
	FollowOther     Action = "FOLLOW_OTHER_XID"  // Xid 154: a recovery action another Xid set
)

// Source is where the table below comes from, and when it was read.
const Source = "NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, " +
	"\"Resolution Bucket (Immediate Action)\") as NVIDIA's NVSentinel maps it " +
	"(github.com/NVIDIA/NVSentinel distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv at 6f8b0fc), read 2026-12-02"

// Known is the highest Xid the table covers; every code from 1 to Known
// has an action.
const Known = 162

// actions lists each action's Xids, after Source. Xids 1 to 7 and the
// others under ReportIssue are unused on Ampere and newer GPUs: seen there,
// they are to be reported.
var actions = map[Action][]int{
	RestartApp: {8, 11, 13, 25, 31, 32, 39, 40, 41, 60, 68, 69, 70, 71, 72, 75, 76, 77, 80, 82, 83, 84, 85, 86, 88, 89, 94,
		96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 139},
	Ignore:         {14, 37, 38, 43, 44, 63, 66, 67, 92, 93, 106, 107, 121, 137, 141, 152, 153, 157, 161},
	ResetGPU:       {46, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158, 162},
	RestartMachine: {79, 160},
	RestartVM:      {151},
	DoubleBitECC:   {48},
	Cleanup:        {45},
	NVLink:         {74, 144, 145, 146, 147, 148, 149, 150},
	ReportIssue: {1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28, 29, 30, 33, 34, 35,
		36, 42, 47, 49, 50, 51, 52, 53, 55, 56, 57, 58, 59, 61, 65, 73, 81, 87, 90, 91, 108, 111, 112, 113, 114, 115, 116,
		117, 118, 122, 123, 124, 125, 138, 142},
	CheckMechanical: {54},
	UpdateSoftware:  {78},
	CheckUVM:        {159},
	FollowOther:     {154},
}

// Severity is how much an Xid in the log weighs for someone renting the
// machine.
type Severity int

const (
	// Benign: the application's own error (an illegal address, a device
	// assert, a killed process) or a note; it says nothing against the
	// hardware.
	Benign Severity = iota
	// Notable: worth a look: a memory error the GPU contained, a recovery
	// action set by another Xid, or an Xid the table does not know.
	Notable
	// Hardware: the GPU, its memory, its links or the driver failed, and
	// a reset or reboot is due.
	Hardware
)

// XidInfo is what gpurent knows of one Xid.
type XidInfo struct {
	Code     int
	Action   Action // "" when the table does not know the code
	Severity Severity
	// Words: what it means, for a person renting the machine.
	Words i18n.Text
}

// Lookup says what the catalog's action for code means to a renter.
func LookupXid(code int) XidInfo {
	in := XidInfo{Code: code, Severity: Notable, Words: i18n.Textf("Xid %d is not in gpurent's table (NVIDIA's catalog up to Xid %d): look it up in NVIDIA's Xid catalog", code, Known)}
	for a, codes := range actions {
		for _, c := range codes {
			if c == code {
				in.Action = a
			}
		}
	}
	switch in.Action {
	case RestartApp:
		in.Severity, in.Words = Benign, i18n.Textf("NVIDIA's catalog: restart the application; usually the program's own error (an illegal memory access, a device-side assert)")
		if code == 94 {
			in.Severity, in.Words = Notable, i18n.Textf("a memory error the GPU contained: the program that met it was stopped and others run on; NVIDIA's catalog: restart the application. Repeated, the memory is failing")
		}
	case Ignore:
		in.Severity, in.Words = Benign, i18n.Textf("NVIDIA's catalog: informational, no action")
	case Cleanup:
		in.Severity, in.Words = Benign, i18n.Textf("the driver ended a GPU context after an earlier error or a killed process; the Xid before it, if any, is the cause")
	case CheckUVM:
		in.Severity, in.Words = Benign, i18n.Textf("NVIDIA's catalog: check unified memory (UVM) use")
	case FollowOther:
		in.Severity, in.Words = Notable, i18n.Textf("the GPU's recovery action changed after another Xid (its message names the new one: a reset or a reboot)")
	case ResetGPU:
		in.Severity, in.Words = Hardware, i18n.Textf("NVIDIA's catalog: the GPU needs a reset (nvidia-smi -r, with no process on it; on a rented machine only the provider can)")
	case RestartMachine:
		in.Severity, in.Words = Hardware, i18n.Textf("NVIDIA's catalog: the machine needs a reboot; the GPU answers nothing until then")
	case RestartVM:
		in.Severity, in.Words = Hardware, i18n.Textf("NVIDIA's catalog: the virtual machine needs a restart")
	case DoubleBitECC:
		in.Severity, in.Words = Hardware, i18n.Textf("an uncorrectable (double-bit) GPU memory error: data in GPU memory may be wrong; the GPU needs a reset, and the error repeating means failing memory")
	case NVLink:
		in.Severity, in.Words = Hardware, i18n.Textf("an NVLink fault: traffic between GPUs (NCCL) fails or falls back; the GPU needs a reset")
	case ReportIssue:
		in.Severity, in.Words = Hardware, i18n.Textf("NVIDIA's catalog: unexpected on current GPUs, report it (to the provider)")
	case CheckMechanical:
		in.Severity, in.Words = Hardware, i18n.Textf("NVIDIA's catalog: check power and cooling")
	case UpdateSoftware:
		in.Severity, in.Words = Hardware, i18n.Textf("NVIDIA's catalog: update the driver or firmware")
	}
	return in
}
