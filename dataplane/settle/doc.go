// Package settle is the request's last stage: what the request is charged (the larger of
// the output the server reported and the output the client was delivered, within the
// request's bounds), its price, and its record handed to the meter with its metrics,
// access-log line and trace.
//
// A request's record lives in a Box from the first attempt on (Box.Start); Settler.Record
// prices and hands it over once, and Settler.Start hands over a stream's start entry.
package settle
