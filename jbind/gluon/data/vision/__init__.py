"""`mx.gluon.data.vision`: image datasets and transforms."""
