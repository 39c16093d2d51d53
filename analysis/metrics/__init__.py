"""Every metric of one sweep: scaling, batch size, communication, stragglers and accuracy."""
