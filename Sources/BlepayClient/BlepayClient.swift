// BlepayClient: the blepay daemons as an app drives them, in the reference SDK's shape, over the control API on
// D-Bus (`docs/control-api.md`). A customer app registers for payments (an async stream of events, active until it
// stops), accepts or cancels what it is shown; a business app sends payment requests, cancels them, and follows
// their events. Refusals keep the daemons' stable codes (`BlepayClientError`).
