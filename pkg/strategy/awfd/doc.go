// Package awfd is the AWFD strategy's own code on the Go side (Spotlight's
// adaptive weighted flow dispatching): its controller side and background
// work (capacity polls, class records, their metrics), registered into
// ctlstrategy; its mux loader side (the class record in its slot,
// muxspi); the mux daemon's class record follower (daemonspi); and its
// reference-model decision (modelspi); all registered in init(). Its
// algorithms are classes.
package awfd
