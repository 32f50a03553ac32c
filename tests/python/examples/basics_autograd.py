# Autograd basics: y = w * x + b, gradients of a scalar and of a small linear layer.
import numpy as np
import torch
import torch.nn as nn

x = torch.tensor(1., requires_grad=True)
w = torch.tensor(2., requires_grad=True)
b = torch.tensor(3., requires_grad=True)

y = w * x + b
y.backward()
print(x.grad)    # tensor(2.)
print(w.grad)    # tensor(1.)
print(b.grad)    # tensor(1.)
grads = [x.grad.item(), w.grad.item(), b.grad.item()]

rng = np.random.RandomState(0)
x = torch.from_numpy(rng.randn(10, 3).astype(np.float32))
y = torch.from_numpy(rng.randn(10, 2).astype(np.float32))

linear = nn.Linear(3, 2)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)

pred = linear(x)
loss = criterion(pred, y)
print('loss: ', loss.item())
loss.backward()
print('dL/dw: ', linear.weight.grad)
print('dL/db: ', linear.bias.grad)
optimizer.step()

pred = linear(x)
loss2 = criterion(pred, y)
print('loss after 1 step optimization: ', loss2.item())
losses = [loss.item(), loss2.item()]
grads += linear.weight.grad.flatten().tolist() + linear.bias.grad.tolist()
