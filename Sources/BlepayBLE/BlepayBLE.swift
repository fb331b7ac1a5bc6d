/// blepay's payment transport over BlueZ: the customer's GATT server and advertisement, the business's scanner
/// and GATT client, each running one `Link` (framing, handshake, encrypted session) per connection and reporting
/// to the payment drivers as a `PaymentTransport`.
enum BlepayBLE {}
