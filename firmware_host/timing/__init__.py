"""The timing core: one hub timeline from every node's clock, then hub-time order.

``unwrap`` (wrapping counters), ``clock_model`` (CLOCK_SYNC lower-envelope
fit), ``timeline`` (epochs, mapping, the ordered release shared by the batch
and the live path).  Pure: no clock is read here, every input carries its time.
"""
