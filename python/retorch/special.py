"""retorch.special: the torch.special names of retorch's special functions (aliases only)."""
from . import _C

erf = _C.erf
erfc = _C.erfc
erfinv = _C.erfinv
expit = _C.sigmoid
exp2 = _C.exp2
expm1 = _C.expm1
log1p = _C.log1p
gammaln = _C.lgamma
digamma = _C.digamma
psi = _C.digamma
polygamma = _C.polygamma
i0 = _C.i0
i1 = _C.special_i1
sinc = _C.sinc
logit = _C.logit
xlogy = _C.xlogy
softmax = _C.softmax
log_softmax = _C.log_softmax
logsumexp = _C.logsumexp
