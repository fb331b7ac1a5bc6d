/// The GATT service a customer serves and a business looks for (`docs/protocol.md` §1, §2).
public enum GattLayout {
    public static let service = "6e2d1000-5b1a-4c8e-9d4a-b1e9a7000001"
    /// Frames to the customer: write with response only.
    public static let toCustomer = "6e2d1001-5b1a-4c8e-9d4a-b1e9a7000001"
    /// Frames to the business: notify.
    public static let toBusiness = "6e2d1002-5b1a-4c8e-9d4a-b1e9a7000001"
    /// Frames to the customer as write commands: write-without-response only, for a business that writes through
    /// a socket (`AcquireWrite`); the customer takes them in the order they came.
    public static let toCustomerCommands = "6e2d1004-5b1a-4c8e-9d4a-b1e9a7000001"
    /// The encoded `ProtocolInfo`: read.
    public static let info = "6e2d1003-5b1a-4c8e-9d4a-b1e9a7000001"
}
