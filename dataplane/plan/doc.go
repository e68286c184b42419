// Package plan is the stage between admission and the attempts: it turns a parsed request
// into a Call, the one description of the request every later stage reads: the model, the
// routes that may serve it, its usage bounds, its prefix key, and how each attempt's body is
// built (the client's with the route's model name, or translated to chat completions).
package plan
