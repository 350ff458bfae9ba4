//go:build race

package endpoints

// raceEnabled reports that the tests run under the race detector, whose
// instrumentation allocates: allocation counts mean nothing there.
const raceEnabled = true
