# A two-layer convolutional network with batch normalization.
import numpy as np
import torch
import torch.nn as nn

# Device configuration (the tutorial's line; retorch runs it on cuda without a GPU, see
# test_devices.py)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

num_epochs = 2
num_classes = 10
batch_size = 8
learning_rate = 0.001

rng = np.random.RandomState(2)
images_all = rng.rand(16, 1, 28, 28).astype(np.float32)
labels_all = rng.randint(0, num_classes, size=16).astype(np.int64)


class ConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super(ConvNet, self).__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(16, 32, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Linear(7 * 7 * 32, num_classes)

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.reshape(out.size(0), -1)
        out = self.fc(out)
        return out


model = ConvNet(num_classes).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

losses = []
for epoch in range(num_epochs):
    for i in range(0, len(images_all), batch_size):
        images = torch.from_numpy(images_all[i:i + batch_size]).to(device)
        labels = torch.from_numpy(labels_all[i:i + batch_size]).to(device)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

model.eval()
with torch.no_grad():
    outputs = model(torch.from_numpy(images_all).to(device))
    _, predicted = torch.max(outputs.data, 1)
    eval_logits = outputs.flatten().tolist()
