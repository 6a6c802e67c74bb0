package hub

import "time"

// SetSubscribeWait sets how soon the subscribe frame must arrive; restore
// puts the default back (call it once every server is stopped).
func SetSubscribeWait(d time.Duration) (restore func()) {
	old := subscribeWait
	subscribeWait = d
	return func() { subscribeWait = old }
}

// SetBodyReadWait sets how long a request body may take to arrive; restore
// puts the default back (call it once every server is stopped).
func SetBodyReadWait(d time.Duration) (restore func()) {
	old := bodyReadWait
	bodyReadWait = d
	return func() { bodyReadWait = old }
}

// SetWriteWait sets how long one WebSocket frame may take to be written;
// restore puts the default back (call it once every server is stopped).
func SetWriteWait(d time.Duration) (restore func()) {
	old := writeWait
	writeWait = d
	return func() { writeWait = old }
}
